"""OneFlow v0.3.4 oneflow/python/test/ops/test_sort.py, ported: "gpu" -> "cpu"; TensorFlow's sort/argsort ->
NumPy's stable sort. Its placeholders are larger than its inputs (dynamic blobs)."""

from collections import OrderedDict
from types import SimpleNamespace

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, TestCase, type_name_to_flow_type, type_name_to_np_type


class _NpValue:
    def __init__(self, value):
        self.value = value

    def numpy(self):
        return self.value


def _np_argsort(x, axis=-1, direction="ASCENDING", stable=True):
    """TensorFlow's argsort (stable): equal values keep their order in both directions."""
    key = x if direction == "ASCENDING" else (~x if x.dtype.kind in "iu" else -x)
    return np.argsort(key, axis=axis, kind="stable")


tf = SimpleNamespace(
    sort=lambda x, axis=-1, direction="ASCENDING": _NpValue(
        np.take_along_axis(x, _np_argsort(x, axis, direction), axis=axis)),
    argsort=lambda x, axis=-1, direction="ASCENDING", stable=True: _NpValue(_np_argsort(x, axis, direction)),
)


def compare_with_tensorflow(device_type, in_shape, axis, direction, data_type):
    assert device_type in ["cpu"]
    assert data_type in ["float32", "double", "int8", "int32", "int64"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.mirrored_view())
    func_config.default_data_type(flow.float)

    @flow.global_function(function_config=func_config)
    def SortJob(
        input: oft.ListNumpy.Placeholder(
            tuple([dim + 10 for dim in in_shape]),
            dtype=type_name_to_flow_type[data_type],
        )
    ):
        with flow.scope.placement(device_type, "0:0"):
            return flow.sort(input, axis, direction)

    input = (np.random.random(in_shape) * 100).astype(type_name_to_np_type[data_type])
    # OneFlow
    of_out = SortJob([input]).get().numpy_list()[0]
    # TensorFlow
    tf_out = tf.sort(input, axis, direction)

    assert np.array_equal(of_out, tf_out.numpy())


def gen_arg_list():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["in_shape"] = [(100,), (100, 100), (10, 10, 200)]
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


def test_sort():
    test_case = TestCase()
    for arg in gen_arg_list():
        compare_with_tensorflow(*arg)
    for arg in gen_arg_list_for_test_axis():
        compare_with_tensorflow(*arg)

