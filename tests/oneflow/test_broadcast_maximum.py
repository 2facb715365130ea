"""OneFlow v0.3.4 oneflow/python/test/ops/test_broadcast_maximum.py, ported: its two cases are GPU-only in OneFlow
and run here on "cpu"; the (1024, 1024) shapes are reduced to (256, 256)."""

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase

func_config = flow.FunctionConfig()
func_config.default_data_type(flow.float)


def _check(test_case, a, b, out):
    test_case.assertTrue(np.array_equal(np.maximum(a, b), out))


def _run_test(test_case, a, b, dtype, device):
    flow.clear_default_session()

    @flow.global_function(function_config=func_config)
    def BroadcastMaximum(
        a: oft.Numpy.Placeholder(a.shape, dtype=dtype),
        b: oft.Numpy.Placeholder(b.shape, dtype=dtype),
    ):
        with flow.scope.placement(device, "0:0"):
            return flow.math.maximum(a, b)

    out = BroadcastMaximum(a, b).get()
    _check(test_case, a, b, out.numpy())


def test_broadcast_maximum_random_gpu():
    a = np.random.rand(256, 256).astype(np.float32)
    b = np.random.rand(256, 256).astype(np.float32)
    _run_test(TestCase(), a, b, flow.float32, "cpu")


def test_broadcast_maximum_broadcast_gpu():
    a = np.random.rand(256, 1).astype(np.float32)
    b = np.random.rand(1, 256).astype(np.float32)
    _run_test(TestCase(), a, b, flow.float32, "cpu")
