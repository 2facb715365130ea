"""OneFlow v0.3.4 oneflow/python/test/ops/test_sqrt.py, ported: CPU for "gpu", TensorFlow -> NumPy float64."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import CompareOpWithNumpy, GenArgDict


def _np_sqrt(x):
    y = np.sqrt(x)
    return y, 0.5 / y


def test_sqrt():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["flow_op"] = [flow.math.sqrt]
    arg_dict["np_op"] = [_np_sqrt]
    arg_dict["input_shape"] = [(10, 20, 30)]
    arg_dict["input_minval"] = [0]
    arg_dict["input_maxval"] = [100]
    for arg in GenArgDict(arg_dict):
        CompareOpWithNumpy(**arg)
