"""OneFlow v0.3.4 oneflow/python/test/ops/test_squared_difference.py, ported: "gpu" -> "cpu"; TensorFlow's
squared_difference (value and gradient, through test_util.CompareOpWithTensorFlow) -> NumPy float64."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import Args, CompareOpWithNumpy, GenArgDict, TestCase


def _np_squared_difference(x, y):
    """TensorFlow's squared_difference and its gradient in x, in float64."""
    return (x - y) ** 2, 2 * (x - y)

func_config = flow.FunctionConfig()
func_config.default_data_type(flow.float)


def GenerateTest(test_case, a_shape, b_shape):
    @flow.global_function(function_config=func_config)
    def SqrDiffJob(
        a: oft.Numpy.Placeholder(a_shape), b: oft.Numpy.Placeholder(b_shape)
    ):
        return flow.math.squared_difference(a, b)

    a = np.random.rand(*a_shape).astype(np.float32)
    b = np.random.rand(*b_shape).astype(np.float32)
    y = SqrDiffJob(a, b).get().numpy()
    test_case.assertTrue(np.allclose(y, (a - b) * (a - b)))


def test_naive():
    test_case = TestCase()
    @flow.global_function(function_config=func_config)
    def SqrDiffJob(
        a: oft.Numpy.Placeholder((5, 2)), b: oft.Numpy.Placeholder((5, 2))
    ):
        return flow.math.squared_difference(a, b)

    x = np.random.rand(5, 2).astype(np.float32)
    y = np.random.rand(5, 2).astype(np.float32)
    z = None
    z = SqrDiffJob(x, y).get().numpy()
    test_case.assertTrue(np.allclose(z, (x - y) * (x - y)))

def test_broadcast():
    test_case = TestCase()
    @flow.global_function(function_config=func_config)
    def SqrDiffJob(
        a: oft.Numpy.Placeholder((5, 2)), b: oft.Numpy.Placeholder((1, 2))
    ):
        return flow.math.squared_difference(a, b)

    x = np.random.rand(5, 2).astype(np.float32)
    y = np.random.rand(1, 2).astype(np.float32)
    z = None
    z = SqrDiffJob(x, y).get().numpy()
    test_case.assertTrue(np.allclose(z, (x - y) * (x - y)))

def test_xy_sqr_diff_x1():
    test_case = TestCase()
    GenerateTest(test_case, (64, 64), (64, 1))

def test_xy_sqr_diff_1y():
    test_case = TestCase()
    GenerateTest(test_case, (64, 64), (1, 64))

def test_xyz_sqr_diff_x1z():
    test_case = TestCase()
    GenerateTest(test_case, (64, 64, 64), (64, 1, 64))

def test_xyz_sqr_diff_1y1():
    test_case = TestCase()
    GenerateTest(test_case, (64, 64, 64), (1, 64, 1))

def test_scalar_sqr_diff():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["flow_op"] = [flow.math.squared_difference]
    arg_dict["input_shape"] = [(10, 10, 10)]
    arg_dict["op_args"] = [
        Args([1]),
        Args([-1]),
        Args([84223.19348]),
        Args([-3284.139]),
    ]
    for arg in GenArgDict(arg_dict):
        y = arg["op_args"].flow_args[0]
        CompareOpWithNumpy(arg["device_type"], arg["flow_op"], lambda x, y=y: _np_squared_difference(x, y),
                           arg["input_shape"], arg["op_args"].flow_args)

