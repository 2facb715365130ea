"""OneFlow v0.3.4 oneflow/python/test/ops/test_parallel.py, ported mechanically (no TensorFlow in it): imports, unittest
classes as pytest functions, "gpu" devices as "cpu" ones (gpu_device_num -> cpu_device_num)."""

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase


def NaiveTest(test_case):
    shape = (16, 2)
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(function_config=func_config)
    def AddJob(a: oft.Numpy.Placeholder(shape), b: oft.Numpy.Placeholder(shape)):
        return a + b + b

    x = np.random.rand(*shape).astype(np.float32)
    y = np.random.rand(*shape).astype(np.float32)
    z = AddJob(x, y).get().numpy()
    test_case.assertTrue(np.array_equal(z, x + y + y))


def test_1n1c():
    test_case = TestCase()
    flow.config.cpu_device_num(1)
    NaiveTest(test_case)
def test_1n2c():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    NaiveTest(test_case)
def test_2n2c():
    test_case = TestCase()
    flow.config.cpu_device_num(1)
    NaiveTest(test_case)
