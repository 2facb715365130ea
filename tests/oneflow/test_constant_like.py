"""OneFlow v0.3.4 oneflow/python/test/ops/test_constant_like.py, ported: "gpu" -> "cpu" (gpu_device_num -> cpu_device_num).
No TensorFlow in it. The (10, 3, 32, 1024) input reduced to (10, 3, 32, 64)."""


import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase


def _check(test_case, x, y, value, dtype=None):
    np_constant_like = np.full(x.shape, value)
    test_case.assertTrue(np.array_equal(np_constant_like, y))


def _run_test(test_case, x, value, dtype=None, device="cpu"):
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def ConstantLikeJob(x: oft.Numpy.Placeholder(x.shape)):
        return flow.constant_like(x, value=value, dtype=dtype)

    y = ConstantLikeJob(x).get()
    _check(test_case, x, y.numpy(), value, dtype=dtype)


def test_constant_like_gpu_float():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 1.0, flow.float, "cpu")

def test_constant_like_cpu_float():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 2.0, flow.float, "cpu")

def test_constant_like_gpu_double():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 3.0, flow.double, "cpu")

def test_constant_like_cpu_double():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 4.0, flow.double, "cpu")

def test_constant_like_gpu_int8():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 5.0, flow.int8, "cpu")

def test_constant_like_cpu_int8():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 6.0, flow.int8, "cpu")

def test_constant_like_gpu_int32():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 7.0, flow.int32, "cpu")

def test_constant_like_cpu_int32():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 8.0, flow.int32, "cpu")

def test_constant_like_gpu_int64():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 9.0, flow.int64, "cpu")

def test_constant_like_cpu_int64():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 10.0, flow.int64, "cpu")

def test_constant_like_gpu():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 11.0, device="cpu")

def test_constant_like_cpu():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 64).astype(np.float32)
    _run_test(test_case, x, 12.0, device="cpu")

