"""OneFlow v0.3.4 oneflow/python/test/ops/test_keep_header_only_cpu.py, ported: imports only (no TensorFlow in it).
``flow.math.reduced_shape_elem_cnt`` reads only its input's header (OneFlow's use_header_only input)."""

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import TestCase

func_config = flow.FunctionConfig()
func_config.default_data_type(flow.float)
func_config.default_logical_view(flow.scope.consistent_view())


def test_keep_header_only_cpu():
    test_case = TestCase()

    @flow.global_function(function_config=func_config)
    def job(x: oft.Numpy.Placeholder((2, 3, 4), dtype=flow.float)):
        with flow.scope.placement("cpu", "0:0"):
            x = flow.identity(x)
            return flow.math.reduced_shape_elem_cnt(x)

    test_case.assertTrue(
        job(np.zeros((2, 3, 4), np.float32)).get().item() == 2 * 3 * 4
    )
