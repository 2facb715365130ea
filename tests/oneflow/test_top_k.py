"""OneFlow v0.3.4 oneflow/python/test/ops/test_top_k.py, ported: CPU only, tf.math.top_k's indices -> the first k
of a stable descending NumPy argsort (TensorFlow's top_k also puts equal values in index order), shapes reduced
((10, 10, 500) -> (4, 10, 50), (10, 500) -> (10, 100); k 200 -> 60 so that k > n still occurs). The mirrored
ListNumpy placeholder is 10 larger on each axis than the input (a dynamic blob in OneFlow), so the file is a strict
xfail on that gap; tests/ops/test_sort_ops.py runs the same comparisons with static placeholders."""

from collections import OrderedDict

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, type_name_to_flow_type, type_name_to_np_type


def np_argsort_descending(x, axis):
    n = x.shape[axis]
    return np.flip(n - 1 - np.argsort(np.flip(x, axis), axis, kind="stable"), axis)


def compare_with_tensorflow(device_type, in_shape, axis, k, data_type, sorted):
    assert device_type in ["gpu", "cpu"]
    assert data_type in ["float32", "double", "int8", "int32", "int64"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.mirrored_view())
    func_config.default_data_type(flow.float)

    @flow.global_function(function_config=func_config)
    def TopKJob(input: oft.ListNumpy.Placeholder(tuple([dim + 10 for dim in in_shape]),
                                                 dtype=type_name_to_flow_type[data_type])):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.top_k(input, axis, k, sorted)

    input = (np.random.random(in_shape) * 100).astype(type_name_to_np_type[data_type])
    of_out = TopKJob([input]).get().numpy_list()[0]
    desc = np_argsort_descending(input, axis)
    if k <= in_shape[axis]:
        tf_out = np.take(desc, range(k), axis=axis)
    else:
        tf_out = desc
    assert np.array_equal(of_out, tf_out)


def gen_arg_list():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["in_shape"] = [(100,), (100, 100), (10, 100), (4, 10, 50)]
    arg_dict["axis"] = [-1]
    arg_dict["k"] = [1, 50, 60]
    arg_dict["data_type"] = ["float32", "double", "int32", "int64"]
    arg_dict["sorted"] = [True]
    return GenArgList(arg_dict)


def gen_arg_list_for_test_axis():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["in_shape"] = [(4, 10, 50)]
    arg_dict["axis"] = [-2, -1, 0, 1, 2]
    arg_dict["k"] = [1, 50, 60]
    arg_dict["data_type"] = ["float32", "double", "int32", "int64"]
    arg_dict["sorted"] = [True]
    return GenArgList(arg_dict)


@pytest.mark.xfail(strict=True, reason="gap: dynamic blobs: a ListNumpy piece smaller than its placeholder is refused "
                   "(OneFlow's mirrored blobs are dynamic; docs/oneflow-api.md 'Dynamic shapes')")
def test_top_k():
    for arg in gen_arg_list():
        compare_with_tensorflow(*arg)
    for arg in gen_arg_list_for_test_axis():
        compare_with_tensorflow(*arg)
