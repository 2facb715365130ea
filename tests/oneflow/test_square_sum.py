"""OneFlow v0.3.4 oneflow/python/test/ops/test_square_sum.py, ported: the two GPU-only cases run on "cpu" (no
TensorFlow in it)."""

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase

func_config = flow.FunctionConfig()
func_config.default_data_type(flow.float)


def _check(test_case, x, y):
    ref_y = np.array(np.sum(x ** 2))
    test_case.assertTrue(np.allclose(y, ref_y))


def _run_test(test_case, x, dtype, device):
    flow.clear_default_session()

    @flow.global_function(function_config=func_config)
    def SquareSum(x: oft.Numpy.Placeholder(x.shape, dtype=dtype)):
        with flow.scope.placement(device, "0:0"):
            return flow.experimental.square_sum(x)

    y = SquareSum(x).get()
    _check(test_case, x, y.numpy())


def test_square_sum_random_gpu():
    test_case = TestCase()
    x = np.random.uniform(-0.01, 0.01, (64, 64)).astype(np.float32)
    _run_test(test_case, x, flow.float32, "cpu")


def test_square_sum_small_blob_gpu():
    test_case = TestCase()
    x = np.random.uniform(-0.01, 0.01, (64,)).astype(np.float32)
    _run_test(test_case, x, flow.float32, "cpu")
