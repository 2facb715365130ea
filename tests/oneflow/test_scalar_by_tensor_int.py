"""OneFlow v0.3.4 oneflow/python/test/ops/test_scalar_by_tensor_int.py, ported mechanically (no TensorFlow in it): imports, unittest
classes as pytest functions, "gpu" devices as "cpu" ones (gpu_device_num -> cpu_device_num)."""

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase


def _check(test_case, x, y, out, case):
    if case == "add":
        np_out = np.add(x, y)
    elif case == "sub":
        np_out = np.subtract(x, y)
    elif case == "mul":
        np_out = np.multiply(x, y)
    elif case == "div":
        if type(y[0]) == np.float32 or type(y[0]) == np.double:
            np_out = np.divide(x, y)
        else:
            np_out = np.floor_divide(x, y)

    test_case.assertTrue(np.allclose(np_out, out, rtol=1e-5, atol=1e-5))


def _run_test(test_case, x, y, case, dtype=None, device="cpu"):
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def ScalarByTensorJob(
        x: oft.Numpy.Placeholder(x.shape, dtype=dtype),
        y: oft.Numpy.Placeholder(y.shape, dtype=dtype),
    ):
        if case == "add":
            return flow.math.add(x, y)
        elif case == "sub":
            return flow.math.subtract(x, y)
        elif case == "mul":
            return flow.math.multiply(x, y)
        elif case == "div":
            return flow.math.divide(x, y)

    out = ScalarByTensorJob(x, y).get()
    _check(test_case, x, y, out.numpy(), case)
def test_scalar_add_by_tensor_gpu_float():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.float32)
    y = np.random.rand(1).astype(np.float32)
    _run_test(test_case, x, y, "add", flow.float, "cpu")

def test_scalar_add_by_tensor_cpu_float():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.float32)
    y = np.random.rand(1).astype(np.float32)
    _run_test(test_case, x, y, "add", flow.float, "cpu")

def test_scalar_add_by_tensor_gpu_double():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.double)
    y = np.random.rand(1).astype(np.double)
    _run_test(test_case, x, y, "add", flow.double, "cpu")

def test_scalar_add_by_tensor_cpu_double():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.double)
    y = np.random.rand(1).astype(np.double)
    _run_test(test_case, x, y, "add", flow.double, "cpu")

def test_scalar_add_by_tensor_gpu_int8():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int8)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int8)
    _run_test(test_case, x, y, "add", flow.int8, "cpu")

def test_scalar_add_by_tensor_cpu_int8():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int8)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int8)
    _run_test(test_case, x, y, "add", flow.int8, "cpu")

def test_scalar_add_by_tensor_gpu_int32():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int32)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int32)
    _run_test(test_case, x, y, "add", flow.int32, "cpu")

def test_scalar_add_by_tensor_cpu_int32():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int32)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int32)
    _run_test(test_case, x, y, "add", flow.int32, "cpu")

def test_scalar_add_by_tensor_gpu_int64():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int64)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int64)
    _run_test(test_case, x, y, "add", flow.int64, "cpu")

def test_scalar_add_by_tensor_cpu_int64():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int64)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int64)
    _run_test(test_case, x, y, "add", flow.int64, "cpu")

def test_scalar_sub_by_tensor_gpu_float():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.float32)
    y = np.random.rand(1).astype(np.float32)
    _run_test(test_case, x, y, "sub", flow.float, "cpu")

def test_scalar_sub_by_tensor_cpu_float():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.float32)
    y = np.random.rand(1).astype(np.float32)
    _run_test(test_case, x, y, "sub", flow.float, "cpu")

def test_scalar_sub_by_tensor_gpu_double():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.double)
    y = np.random.rand(1).astype(np.double)
    _run_test(test_case, x, y, "sub", flow.double, "cpu")

def test_scalar_sub_by_tensor_cpu_double():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.double)
    y = np.random.rand(1).astype(np.double)
    _run_test(test_case, x, y, "sub", flow.double, "cpu")

def test_scalar_sub_by_tensor_gpu_int8():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int8)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int8)
    _run_test(test_case, x, y, "sub", flow.int8, "cpu")

def test_scalar_sub_by_tensor_cpu_int8():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int8)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int8)
    _run_test(test_case, x, y, "sub", flow.int8, "cpu")

def test_scalar_sub_by_tensor_gpu_int32():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int32)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int32)
    _run_test(test_case, x, y, "sub", flow.int32, "cpu")

def test_scalar_sub_by_tensor_cpu_int32():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int32)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int32)
    _run_test(test_case, x, y, "sub", flow.int32, "cpu")

def test_scalar_sub_by_tensor_gpu_int64():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int64)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int64)
    _run_test(test_case, x, y, "sub", flow.int64, "cpu")

def test_scalar_sub_by_tensor_cpu_int64():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int64)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int64)
    _run_test(test_case, x, y, "sub", flow.int64, "cpu")

def test_scalar_mul_by_tensor_gpu_float():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.float32)
    y = np.random.rand(1).astype(np.float32)
    _run_test(test_case, x, y, "mul", flow.float, "cpu")

def test_scalar_mul_by_tensor_cpu_float():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.float32)
    y = np.random.rand(1).astype(np.float32)
    _run_test(test_case, x, y, "mul", flow.float, "cpu")

def test_scalar_mul_by_tensor_gpu_double():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.double)
    y = np.random.rand(1).astype(np.double)
    _run_test(test_case, x, y, "mul", flow.double, "cpu")

def test_scalar_mul_by_tensor_cpu_double():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.double)
    y = np.random.rand(1).astype(np.double)
    _run_test(test_case, x, y, "mul", flow.double, "cpu")

def test_scalar_mul_by_tensor_gpu_int8():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int8)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int8)
    _run_test(test_case, x, y, "mul", flow.int8, "cpu")

def test_scalar_mul_by_tensor_cpu_int8():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int8)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int8)
    _run_test(test_case, x, y, "mul", flow.int8, "cpu")

def test_scalar_mul_by_tensor_gpu_int32():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int32)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int32)
    _run_test(test_case, x, y, "mul", flow.int32, "cpu")

def test_scalar_mul_by_tensor_cpu_int32():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int32)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int32)
    _run_test(test_case, x, y, "mul", flow.int32, "cpu")

def test_scalar_mul_by_tensor_gpu_int64():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int64)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int64)
    _run_test(test_case, x, y, "mul", flow.int64, "cpu")

def test_scalar_mul_by_tensor_cpu_int64():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int64)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int64)
    _run_test(test_case, x, y, "mul", flow.int64, "cpu")

def test_scalar_div_by_tensor_gpu_float():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.float32)
    y = np.random.rand(1).astype(np.float32)
    _run_test(test_case, x, y, "div", flow.float, "cpu")

def test_scalar_div_by_tensor_cpu_float():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.float32)
    y = np.random.rand(1).astype(np.float32)
    _run_test(test_case, x, y, "div", flow.float, "cpu")

def test_scalar_div_by_tensor_gpu_double():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.double)
    y = np.random.rand(1).astype(np.double)
    _run_test(test_case, x, y, "div", flow.double, "cpu")

def test_scalar_div_by_tensor_cpu_double():
    test_case = TestCase()
    x = np.random.rand(10, 3, 32, 1024).astype(np.double)
    y = np.random.rand(1).astype(np.double)
    _run_test(test_case, x, y, "div", flow.double, "cpu")

def test_scalar_div_by_tensor_gpu_int8():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int8)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int8)
    _run_test(test_case, x, y, "div", flow.int8, "cpu")

def test_scalar_div_by_tensor_cpu_int8():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int8)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int8)
    _run_test(test_case, x, y, "div", flow.int8, "cpu")

def test_scalar_div_by_tensor_gpu_int32():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int32)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int32)
    _run_test(test_case, x, y, "div", flow.int32, "cpu")

def test_scalar_div_by_tensor_cpu_int32():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int32)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int32)
    _run_test(test_case, x, y, "div", flow.int32, "cpu")

def test_scalar_div_by_tensor_gpu_int64():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int64)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int64)
    _run_test(test_case, x, y, "div", flow.int64, "cpu")

def test_scalar_div_by_tensor_cpu_int64():
    test_case = TestCase()
    x = np.random.randint(low=1, high=10, size=(10, 3, 32, 1024), dtype=np.int64)
    y = np.random.randint(low=1, high=10, size=(1,), dtype=np.int64)
    _run_test(test_case, x, y, "div", flow.int64, "cpu")
