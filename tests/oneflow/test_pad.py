"""OneFlow v0.3.4 oneflow/python/test/ops/test_pad.py, ported: CPU only, tf.pad -> np.pad (constant mode; the
gradient of a pad under a ones loss diff is ones on the input)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import CompareOpWithNumpy, GenArgDict


def _np_pad(paddings, constant_value=0):
    def op(x):
        return np.pad(x, paddings, mode="constant", constant_values=constant_value), np.ones_like(x)
    return op


def _run(input_shapes, op_args):
    for flow_args in op_args:
        arg_dict = OrderedDict()
        arg_dict["device_type"] = ["cpu"]
        arg_dict["flow_op"] = [flow.pad]
        arg_dict["np_op"] = [_np_pad(*flow_args)]
        arg_dict["input_shape"] = input_shapes
        arg_dict["op_args"] = [flow_args]
        for arg in GenArgDict(arg_dict):
            CompareOpWithNumpy(**arg)


def test_pad():
    _run([(2, 2, 1, 3), (1, 1, 2, 3)], [
        [([1, 2], [0, 0], [1, 2], [1, 1])],
        [([0, 0], [30, 0], [0, 1], [1, 0]), 99999999999999999999999999999999],
        [([10, 0], [0, 0], [10, 20], [0, 0])],
    ])


def test_pad_5d():
    _run([(2, 2, 1, 3, 1), (1, 1, 2, 3, 1)], [
        [([1, 2], [3, 4], [5, 6], [7, 8], [9, 10])],
        [([1, 1], [2, 2], [3, 3], [4, 4], [5, 5])],
        [([0, 0], [0, 0], [10, 20], [0, 0], [3, 2])],
    ])
