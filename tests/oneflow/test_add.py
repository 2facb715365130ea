"""OneFlow v0.3.4 oneflow/python/test/ops/test_add.py, ported: CPU only; test_scalar_add's TensorFlow reference ->
NumPy (x + c, gradient ones)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import CompareOpWithNumpy, GenArgDict

func_config = flow.FunctionConfig()
func_config.default_data_type(flow.float)


def GenerateTest(a_shape, b_shape):
    @flow.global_function(function_config=func_config)
    def AddJob(a: oft.Numpy.Placeholder(a_shape), b: oft.Numpy.Placeholder(b_shape)):
        return a + b

    a = np.random.rand(*a_shape).astype(np.float32)
    b = np.random.rand(*b_shape).astype(np.float32)
    y = AddJob(a, b).get().numpy()
    assert np.array_equal(y, a + b)


def test_naive():
    @flow.global_function(function_config=func_config)
    def AddJob(a: oft.Numpy.Placeholder((5, 2)), b: oft.Numpy.Placeholder((5, 2))):
        return a + b + b

    x = np.random.rand(5, 2).astype(np.float32)
    y = np.random.rand(5, 2).astype(np.float32)
    z = AddJob(x, y).get().numpy()
    assert np.array_equal(z, x + y + y)


def test_broadcast():
    @flow.global_function(function_config=func_config)
    def AddJob(a: oft.Numpy.Placeholder((5, 2)), b: oft.Numpy.Placeholder((1, 2))):
        return a + b

    x = np.random.rand(5, 2).astype(np.float32)
    y = np.random.rand(1, 2).astype(np.float32)
    z = AddJob(x, y).get().numpy()
    assert np.array_equal(z, x + y)


def test_xy_add_x1():
    GenerateTest((64, 64), (64, 1))


def test_xy_add_1y():
    GenerateTest((64, 64), (1, 64))


def test_xyz_add_x1z():
    GenerateTest((64, 64, 64), (64, 1, 64))


def test_xyz_add_1y1():
    GenerateTest((64, 64, 64), (1, 64, 1))


def test_scalar_add():
    for c in [1, -1, 84223.19348, -3284.139]:
        arg_dict = OrderedDict()
        arg_dict["device_type"] = ["cpu"]
        arg_dict["flow_op"] = [flow.math.add]
        arg_dict["np_op"] = [lambda x, c=c: (x + np.float32(c), np.ones_like(x))]
        arg_dict["input_shape"] = [(10, 10, 10)]
        arg_dict["op_args"] = [[c]]
        for arg in GenArgDict(arg_dict):
            CompareOpWithNumpy(**arg)
