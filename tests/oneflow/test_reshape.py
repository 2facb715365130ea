"""OneFlow v0.3.4 oneflow/python/test/ops/test_reshape.py, ported: CPU for "gpu", tf.reshape -> np.reshape (the
gradient of a reshape under a ones loss diff is ones)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import CompareOpWithNumpy, GenArgDict


def _np_reshape(shape):
    def op(x):
        return np.reshape(x, shape), np.ones_like(x)
    return op


def test_reshape():
    for shape in [(100, 10), (10, 100), (5, 20, 10)]:
        arg_dict = OrderedDict()
        arg_dict["device_type"] = ["cpu"]
        arg_dict["flow_op"] = [flow.reshape]
        arg_dict["np_op"] = [_np_reshape(shape)]
        arg_dict["input_shape"] = [(10, 10, 10)]
        arg_dict["op_args"] = [[shape]]
        for arg in GenArgDict(arg_dict):
            CompareOpWithNumpy(**arg)
