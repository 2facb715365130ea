"""OneFlow v0.3.4 oneflow/python/test/ops/test_one_hot.py, ported: CPU only, tf.one_hot -> NumPy (on where the index
matches along the new axis, off elsewhere)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, type_name_to_flow_type, type_name_to_np_type


def _check(x, y, depth, on_value, off_value, axis):
    hot = np.expand_dims(x, -1) == np.arange(depth)
    out = np.moveaxis(np.where(hot, on_value, off_value), -1, axis if axis >= 0 else x.ndim + 1 + axis)
    assert np.array_equal(out, y)


def _run_test(device_type, x_shape, depth, dtype, out_dtype, on_value, off_value, axis):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(function_config=func_config)
    def one_hot_job(x: oft.Numpy.Placeholder(x_shape, dtype=type_name_to_flow_type[dtype])):
        with flow.scope.placement(device_type, "0:0"):
            return flow.one_hot(x, depth=depth, on_value=on_value, off_value=off_value, axis=axis,
                                dtype=type_name_to_flow_type[out_dtype])

    x = np.random.randint(0, depth, x_shape).astype(type_name_to_np_type[dtype])
    y = one_hot_job(x).get()
    _check(x, y.numpy(), depth, on_value, off_value, axis)


def test_one_hot():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(10, 20, 20)]
    arg_dict["depth"] = [10]
    arg_dict["dtype"] = ["int32", "int64"]
    arg_dict["out_dtype"] = ["int32", "double"]
    arg_dict["on_value"] = [5]
    arg_dict["off_value"] = [2]
    arg_dict["axis"] = [-1, 0, 2]
    for arg in GenArgList(arg_dict):
        _run_test(*arg)
