"""OneFlow v0.3.4 oneflow/python/test/ops/test_argmax.py, ported: CPU only, tf.math.argmax -> np.argmax, shapes
reduced ((1000, 1000) -> (100, 1000), (10, 10, 2000) -> (2, 10, 2000), (10, 10, 20, 30) -> (4, 10, 20, 30)). The
mirrored ListNumpy placeholder is 10 larger on each axis than the input (a dynamic blob in OneFlow)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, type_name_to_flow_type, type_name_to_np_type


def compare_with_tensorflow(device_type, in_shape, axis, data_type):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.mirrored_view())
    func_config.default_data_type(flow.float)

    @flow.global_function(function_config=func_config)
    def ArgMaxJob(input: oft.ListNumpy.Placeholder(tuple([dim + 10 for dim in in_shape]),
                                                   dtype=type_name_to_flow_type[data_type])):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.argmax(input, axis)

    input = (np.random.random(in_shape) * 100).astype(type_name_to_np_type[data_type])
    of_out = ArgMaxJob([input]).get().numpy_list()[0]
    ref = np.argmax(input, axis)
    ref = np.array([ref]) if np.ndim(ref) == 0 else ref
    assert np.array_equal(of_out, ref)


def gen_arg_list():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["in_shape"] = [(100,), (100, 100), (100, 1000), (2, 10, 2000), (10, 10000)]
    arg_dict["axis"] = [-1]
    arg_dict["data_type"] = ["float32", "double", "int32", "int64"]
    return GenArgList(arg_dict)


def gen_arg_list_for_test_axis():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["in_shape"] = [(4, 10, 20, 30)]
    arg_dict["axis"] = [-2, -1, 0, 1, 2]
    arg_dict["data_type"] = ["float32", "double", "int32", "int64"]
    return GenArgList(arg_dict)


def test_argmax():
    for arg in gen_arg_list():
        compare_with_tensorflow(*arg)
    for arg in gen_arg_list_for_test_axis():
        compare_with_tensorflow(*arg)
