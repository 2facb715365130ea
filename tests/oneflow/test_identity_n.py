"""OneFlow v0.3.4 oneflow/python/test/ops/test_identity_n.py, ported unchanged but for the imports."""

from typing import Tuple

import numpy as np

import flowlab as flow
import flowlab.typing as oft

func_config = flow.FunctionConfig()
func_config.default_data_type(flow.float)


def test_identity_n():
    @flow.global_function(function_config=func_config)
    def identity_n_job(xs: Tuple[(oft.Numpy.Placeholder((5, 2)),) * 3]):
        return flow.identity_n(xs)

    inputs = tuple(np.random.rand(5, 2).astype(np.float32) for i in range(3))
    res = identity_n_job(inputs).get()
    for i in range(3):
        assert np.array_equal(res[i].numpy(), inputs[i])
