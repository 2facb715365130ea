"""OneFlow v0.3.4 oneflow/python/test/ops/test_mod.py, ported mechanically (no TensorFlow in it): imports, unittest
classes as pytest functions, "gpu" devices as "cpu" ones (gpu_device_num -> cpu_device_num)."""

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase

func_config = flow.FunctionConfig()
func_config.default_data_type(flow.float)


def GenerateTest(test_case, a_shape, b_shape):
    @flow.global_function(function_config=func_config)
    def ModJob(a: oft.Numpy.Placeholder(a_shape), b: oft.Numpy.Placeholder(b_shape)):
        return a % b

    a = np.random.rand(*a_shape).astype(np.float32)
    b = np.random.rand(*b_shape).astype(np.float32)
    y = ModJob(a, b).get().numpy()
    test_case.assertTrue(np.allclose(y, a % b))
def test_naive():
    test_case = TestCase()
    @flow.global_function(function_config=func_config)
    def ModJob(a: oft.Numpy.Placeholder((5, 2)), b: oft.Numpy.Placeholder((5, 2))):
        return a % b

    x = np.random.rand(5, 2).astype(np.float32)
    y = np.random.rand(5, 2).astype(np.float32)
    z = None
    z = ModJob(x, y).get().numpy()
    test_case.assertTrue(np.allclose(z, x % y))

def test_broadcast():
    test_case = TestCase()
    @flow.global_function(function_config=func_config)
    def ModJob(a: oft.Numpy.Placeholder((5, 2)), b: oft.Numpy.Placeholder((1, 2))):
        return a % b

    x = np.random.rand(5, 2).astype(np.float32)
    y = np.random.rand(1, 2).astype(np.float32)
    z = None
    z = ModJob(x, y).get().numpy()
    test_case.assertTrue(np.allclose(z, x % y))

def test_xy_mod_x1():
    test_case = TestCase()
    GenerateTest(test_case, (64, 64), (64, 1))

def test_xy_mod_1y():
    test_case = TestCase()
    GenerateTest(test_case, (64, 64), (1, 64))

def test_xyz_mod_x1z():
    test_case = TestCase()
    GenerateTest(test_case, (64, 64, 64), (64, 1, 64))

def test_xyz_mod_1y1():
    test_case = TestCase()
    GenerateTest(test_case, (64, 64, 64), (1, 64, 1))
