"""OneFlow v0.3.4 oneflow/python/test/ops/test_add_n.py, ported (no TensorFlow in the original; CPU default)."""

from typing import Tuple

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as oft

func_config = flow.FunctionConfig()
func_config.default_data_type(flow.float)


def GenerateTest(shape, num_inputs):
    @flow.global_function(function_config=func_config)
    def AddJob(xs: Tuple[(oft.Numpy.Placeholder(shape),) * num_inputs]):
        return flow.math.add_n(xs)

    inputs = tuple(np.random.rand(*shape).astype(np.float32) for i in range(num_inputs))
    r = AddJob(inputs).get().numpy()
    assert np.allclose(r, sum(inputs))


def test_naive():
    @flow.global_function(function_config=func_config)
    def AddJob(xs: Tuple[(oft.Numpy.Placeholder((5, 2)),) * 3]):
        return flow.math.add_n(xs)

    inputs = tuple(np.random.rand(5, 2).astype(np.float32) for i in range(3))
    r = AddJob(inputs).get().numpy()
    assert np.allclose(r, sum(inputs))


@pytest.mark.parametrize("num_inputs", [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 100])
def test_n_inputs(num_inputs):
    GenerateTest((64, 64), num_inputs)
