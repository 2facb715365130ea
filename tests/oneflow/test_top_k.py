"""OneFlow v0.3.4 oneflow/python/test/ops/test_top_k.py, ported: "gpu" -> "cpu"; TensorFlow's top_k/argsort
-> NumPy's stable sort (largest first, equal values in index order); transpose_util's two helpers written out.
Its placeholders are larger than its inputs (dynamic blobs)."""

from collections import OrderedDict
from types import SimpleNamespace

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, TestCase, type_name_to_flow_type, type_name_to_np_type


def get_perm_when_transpose_axis_to_last_dim(num_axes, axis):
    axis = axis if axis >= 0 else axis + num_axes
    return [*(i for i in range(num_axes) if i != axis), axis]


def get_inversed_perm(perm):
    return [perm.index(i) for i in range(len(perm))]


class _NpValue:
    def __init__(self, value):
        self.value = value

    def numpy(self):
        return self.value


def _np_descending(x, axis=-1):
    key = ~x if x.dtype.kind in "iu" else -x
    return np.argsort(key, axis=axis, kind="stable")


tf = SimpleNamespace(
    transpose=lambda x, perm: _NpValue(np.transpose(x.value if isinstance(x, _NpValue) else x, perm)),
    argsort=lambda x, axis=-1, direction="DESCENDING", stable=True: _NpValue(_np_descending(x, axis)),
    math=SimpleNamespace(top_k=lambda x, k, sorted=True: (None, _np_descending(x.value)[..., :k])),
)


def compare_with_tensorflow(device_type, in_shape, axis, k, data_type, sorted):
    assert device_type in ["cpu"]
    assert data_type in ["float32", "double", "int8", "int32", "int64"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.mirrored_view())
    func_config.default_data_type(flow.float)

    @flow.global_function(function_config=func_config)
    def TopKJob(
        input: oft.ListNumpy.Placeholder(
            tuple([dim + 10 for dim in in_shape]),
            dtype=type_name_to_flow_type[data_type],
        )
    ):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.top_k(input, axis, k, sorted)

    input = (np.random.random(in_shape) * 100).astype(type_name_to_np_type[data_type])
    # OneFlow
    of_out = TopKJob([input]).get().numpy_list()[0]
    # TensorFlow
    if k <= in_shape[axis]:
        perm = get_perm_when_transpose_axis_to_last_dim(len(in_shape), axis)
        x = tf.transpose(input, perm)
        _, indices = tf.math.top_k(x, k, sorted)
        tf_out = tf.transpose(indices, get_inversed_perm(perm))

    else:
        tf_out = tf.argsort(input, axis, direction="DESCENDING", stable=True)

    assert np.array_equal(of_out, tf_out.numpy())


def gen_arg_list():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["in_shape"] = [(100,), (100, 100), (10, 500), (10, 10, 500)]
    arg_dict["axis"] = [-1]
    arg_dict["k"] = [1, 50, 200]
    arg_dict["data_type"] = ["float32", "double", "int32", "int64"]
    arg_dict["sorted"] = [True]

    return GenArgList(arg_dict)


def gen_arg_list_for_test_axis():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["in_shape"] = [(10, 10, 500)]
    arg_dict["axis"] = [-2, -1, 0, 1, 2]
    arg_dict["k"] = [1, 50, 200]
    arg_dict["data_type"] = ["float32", "double", "int32", "int64"]
    arg_dict["sorted"] = [True]

    return GenArgList(arg_dict)


def test_top_k():
    test_case = TestCase()
    for arg in gen_arg_list():
        compare_with_tensorflow(*arg)
    for arg in gen_arg_list_for_test_axis():
        compare_with_tensorflow(*arg)

