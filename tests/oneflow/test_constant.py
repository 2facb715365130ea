"""OneFlow v0.3.4 oneflow/python/test/ops/test_constant.py, ported: CPU only, (1024, 1024) reduced to (64, 64)."""

import math
from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, type_name_to_flow_type, type_name_to_np_type

func_config = flow.FunctionConfig()
func_config.default_data_type(flow.float)


def _test(device_type, type_name_value):
    type_name, value = type_name_value
    flow.clear_default_session()
    flow_type = type_name_to_flow_type[type_name]
    np_type = type_name_to_np_type[type_name]
    shape = (64, 64)

    @flow.global_function(function_config=func_config)
    def constant_job():
        with flow.scope.placement(device_type, "0:0"):
            return flow.constant(value, dtype=flow_type, shape=shape)

    of_out = constant_job().get().numpy()
    assert np.array_equal(of_out, np.full(shape, value).astype(np_type))


def test_constant():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["type_name_value"] = [
        ("float32", 0), ("float32", 0.0), ("float32", 1), ("float32", 1.0), ("float32", -1), ("float32", -1.0),
        ("float32", math.pi), ("float32", -math.pi), ("float32", float("inf")), ("float32", float("-inf")),
        ("int32", 0), ("int32", 0.0), ("int32", 1), ("int32", 1.0), ("int32", -1), ("int32", -1.0),
        ("int32", 2 ** 31 - 1), ("int32", -(2 ** 31)),
    ]
    for arg in GenArgList(arg_dict):
        _test(*arg)
