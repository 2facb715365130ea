"""OneFlow v0.3.4 oneflow/python/test/ops/test_sort.py, ported: CPU only, tf.sort -> a stable NumPy sort (the
random values rarely tie; where they do, OneFlow's kernels keep index order, which a stable sort gives), shapes
reduced ((10, 10, 200) -> (4, 10, 20)). The mirrored ListNumpy placeholder is 10 larger on each axis than the
input (a dynamic blob in OneFlow), so the file is a strict xfail on that gap; tests/ops/test_sort_ops.py runs the
same comparisons with static placeholders."""

from collections import OrderedDict

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, type_name_to_flow_type, type_name_to_np_type


def np_argsort(x, axis, direction):
    if direction == "ASCENDING":
        return np.argsort(x, axis, kind="stable")
    n = x.shape[axis]
    return np.flip(n - 1 - np.argsort(np.flip(x, axis), axis, kind="stable"), axis)


def compare_with_tensorflow(device_type, in_shape, axis, direction, data_type):
    assert device_type in ["gpu", "cpu"]
    assert data_type in ["float32", "double", "int8", "int32", "int64"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.mirrored_view())
    func_config.default_data_type(flow.float)

    @flow.global_function(function_config=func_config)
    def SortJob(input: oft.ListNumpy.Placeholder(tuple([dim + 10 for dim in in_shape]),
                                                dtype=type_name_to_flow_type[data_type])):
        with flow.scope.placement(device_type, "0:0"):
            return flow.sort(input, axis, direction)

    input = (np.random.random(in_shape) * 100).astype(type_name_to_np_type[data_type])
    of_out = SortJob([input]).get().numpy_list()[0]
    tf_out = np.take_along_axis(input, np_argsort(input, axis, direction), axis)
    assert np.array_equal(of_out, tf_out)


def gen_arg_list():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["in_shape"] = [(100,), (100, 100), (4, 10, 20)]
    arg_dict["axis"] = [-1]
    arg_dict["direction"] = ["ASCENDING", "DESCENDING"]
    arg_dict["data_type"] = ["float32", "double", "int32", "int64"]
    return GenArgList(arg_dict)


def gen_arg_list_for_test_axis():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["in_shape"] = [(10, 10, 20)]
    arg_dict["axis"] = [-2, -1, 0, 1, 2]
    arg_dict["direction"] = ["ASCENDING", "DESCENDING"]
    arg_dict["data_type"] = ["float32", "double", "int32", "int64"]
    return GenArgList(arg_dict)


@pytest.mark.xfail(strict=True, reason="gap: dynamic blobs: a ListNumpy piece smaller than its placeholder is refused "
                   "(OneFlow's mirrored blobs are dynamic; docs/oneflow-api.md 'Dynamic shapes')")
def test_sort():
    for arg in gen_arg_list():
        compare_with_tensorflow(*arg)
    for arg in gen_arg_list_for_test_axis():
        compare_with_tensorflow(*arg)
