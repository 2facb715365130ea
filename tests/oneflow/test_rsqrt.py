"""OneFlow v0.3.4 oneflow/python/test/ops/test_rsqrt.py, ported: gpu_device_num(2) -> cpu_device_num(2), both
cases on "cpu"; the (10, 3, 32, 1024) input reduced to (10, 3, 32, 128). No TensorFlow in it."""

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase


def _check(test_case, x, y):
    np_rsqrt = 1.0 / np.sqrt(x)
    test_case.assertTrue(np.allclose(np_rsqrt, y))


def _run_test(test_case, x, dtype, device):
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def RsqrtJob(x: oft.Numpy.Placeholder(x.shape, dtype=dtype)):
        return flow.math.rsqrt(x)

    y = RsqrtJob(x).get()
    _check(test_case, x, y.numpy())


def test_rsqrt_random_gpu():
    flow.config.cpu_device_num(2)
    x = np.random.rand(10, 3, 32, 128).astype(np.float32)
    _run_test(TestCase(), x, flow.float, "cpu")


def test_rsqrt_random_cpu():
    flow.config.cpu_device_num(2)
    x = np.random.rand(10, 3, 32, 128).astype(np.float32)
    _run_test(TestCase(), x, flow.float, "cpu")
