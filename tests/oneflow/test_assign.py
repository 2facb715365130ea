"""OneFlow v0.3.4 oneflow/python/test/ops/test_assign.py, ported: the "gpu" leg dropped (the cpu one runs), the
two-machine test skipped (not applicable: flow.config.machine_num(2) with a second node), the eager one skipped
(eager mode), gpu_device_num(1) dropped; ``np.float`` (gone from NumPy) written ``np.float64``. No TensorFlow in it."""

from collections import OrderedDict

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgDict, TestCase

flow_to_np_dtype_dict = {
    flow.int32: np.int32,
    flow.float: np.single,
    flow.double: np.float64,
}


def _random_input(shape, dtype):
    if np.issubdtype(dtype, np.integer):
        return np.random.random_integers(low=-10, high=10, size=shape)
    elif np.issubdtype(dtype, np.floating):
        rng = np.random.default_rng()
        return rng.standard_normal(size=shape, dtype=dtype)
    else:
        raise NotImplementedError


def _of_assign_and_relu(value, dtype, device_type, assign=flow.assign):
    flow.clear_default_session()
    flow.config.cpu_device_num(1)
    func_config = flow.FunctionConfig()
    func_config.default_data_type(dtype)
    func_config.default_placement_scope(flow.scope.placement(device_type, "0:0"))

    @flow.global_function(function_config=func_config)
    def assign_fn(value_def: oft.Numpy.Placeholder(value.shape, dtype=dtype)):
        var = flow.get_variable(
            name="var",
            shape=value.shape,
            dtype=dtype,
            initializer=flow.constant_initializer(0),
        )
        assign(var, value_def)

    @flow.global_function(function_config=func_config)
    def relu_fn():
        var = flow.get_variable(
            name="var",
            shape=value.shape,
            dtype=dtype,
            initializer=flow.constant_initializer(0),
        )
        return flow.nn.relu(var)

    assign_fn(value)
    return relu_fn().get().numpy()


def _np_relu(x):
    return np.maximum(x, 0)


def _compare_with_np(test_case, shape, dtype, device_type, assign):
    x = _random_input(shape, flow_to_np_dtype_dict[dtype])
    of_y = _of_assign_and_relu(x, dtype, device_type, assign=assign)
    test_case.assertTrue(np.allclose(_np_relu(x), of_y))


@pytest.mark.skip(reason="not applicable: two machines (flow.config.machine_num(2) with a second node)")
def test_2node_assign():
    pass


def test_assign():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["shape"] = [(10), (30, 4), (8, 256, 20)]
    arg_dict["dtype"] = [flow.float, flow.double]
    arg_dict["device_type"] = ["cpu"]
    arg_dict["assign"] = [flow.assign]
    for arg in GenArgDict(arg_dict):
        _compare_with_np(test_case, **arg)


@pytest.mark.skip(reason="not applicable: eager mode (flow.experimental.eager_assign_121)")
def test_eager_assign_121():
    pass
