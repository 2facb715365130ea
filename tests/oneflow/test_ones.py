"""OneFlow v0.3.4 oneflow/python/test/ops/test_ones.py, ported: "gpu" -> "cpu" (gpu_device_num -> cpu_device_num).
No TensorFlow in it."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as tp

from .of_util import GenArgList, TestCase


def _compare_ones_with_np(input_shape, device_type, machine_ids, device_counts):
    assert device_type in ["cpu"]

    flow.clear_default_session()

    flow.config.cpu_device_num(device_counts)

    func_config = flow.FunctionConfig()
    func_config.default_placement_scope(flow.scope.placement(device_type, machine_ids))

    np_out_ones = np.ones(shape=input_shape, dtype=np.float32)

    @flow.global_function(
        type="train", function_config=func_config,
    )
    def oneflow_ones() -> tp.Numpy:
        with flow.scope.placement(device_type, "0:0"):
            v = flow.get_variable(
                shape=np_out_ones.shape,
                dtype=flow.float32,
                initializer=flow.zeros_initializer(),
                name="x_var",
            )

        of_ones = flow.ones(shape=input_shape, dtype=flow.float32)
        of_out = of_ones + v

        with flow.scope.placement(device_type, "0:0"):
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-3]), momentum=0
            ).minimize(of_out)

        return of_ones

    check = flow.train.CheckPoint()
    check.init()

    of_out_ones = oneflow_ones()
    assert np.allclose(of_out_ones, np_out_ones)


def _gen_arg_dict(shape, device_type, machine_ids, device_counts):
    # Generate a dict to pass parameter to test case
    arg_dict = OrderedDict()
    arg_dict["input_shape"] = [shape]
    arg_dict["device_type"] = [device_type]
    arg_dict["machine_ids"] = [machine_ids]
    arg_dict["device_counts"] = [device_counts]
    return arg_dict


def test_ones_cpu():
    test_case = TestCase()
    arg_dict = _gen_arg_dict(
        shape=(3, 3), device_type="cpu", machine_ids="0:0", device_counts=1
    )
    for arg in GenArgList(arg_dict):
        _compare_ones_with_np(*arg)

def test_ones_gpu():
    test_case = TestCase()
    arg_dict = _gen_arg_dict(
        shape=(3, 16, 32), device_type="cpu", machine_ids="0:0", device_counts=1,
    )
    for arg in GenArgList(arg_dict):
        _compare_ones_with_np(*arg)


def test_ones_gpu_1n2d():
    test_case = TestCase()
    arg_dict = _gen_arg_dict(
        shape=(3, 8, 8, 4), device_type="cpu", machine_ids="0:0-1", device_counts=2,
    )
    for arg in GenArgList(arg_dict):
        _compare_ones_with_np(*arg)

