"""OneFlow v0.3.4 oneflow/python/test/ops/test_gelu.py, ported: CPU for "gpu", TensorFlow's erf form -> NumPy float64
(y = x/2 (1 + erf(x/sqrt 2)), dy/dx = Phi(x) + x phi(x)); (10, 20, 30, 40) reduced to (4, 20, 30, 10)."""

import math
from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgDict, RunOneflowOp

_erf = np.vectorize(math.erf)


def np_gelu(x):
    x = x.astype(np.float64)
    cdf = 0.5 * (1 + _erf(x * math.sqrt(0.5)))
    return x * cdf, cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def test_gelu():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["flow_op"] = [flow.math.gelu]
    arg_dict["flow_args"] = [[]]
    arg_dict["x"] = [np.random.uniform(low=-100, high=100, size=(4, 20, 30, 10)).astype(np.float32)]
    for arg in GenArgDict(arg_dict):
        of_y, of_x_diff = RunOneflowOp(**arg)
        ref_y, ref_x_diff = np_gelu(arg["x"])
        assert np.allclose(of_y, ref_y, rtol=1e-5, atol=1e-5)
        assert np.allclose(of_x_diff, ref_x_diff, rtol=1e-5, atol=1e-5)
