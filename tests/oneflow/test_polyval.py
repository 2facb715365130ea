"""OneFlow v0.3.4 oneflow/python/test/ops/test_polyval.py, ported: "gpu" -> "cpu" (gpu_device_num(2) ->
cpu_device_num(2): the 1n2d case still runs on two devices). No TensorFlow in it."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as tp

from .of_util import GenArgList, TestCase, type_name_to_flow_type, type_name_to_np_type


def compare_with_numpy(device_type, device_num, in_shape, data_type, coeffs):
    assert device_type in ["cpu"]
    assert data_type in ["float32", "double"]
    flow_data_type = type_name_to_flow_type[data_type]
    flow.clear_default_session()
    flow.config.cpu_device_num(device_num)
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow_data_type)
    func_config.default_placement_scope(
        flow.scope.placement(device_type, f"0:0-{device_num - 1}")
    )
    func_config.default_logical_view(flow.scope.consistent_view())

    x = (np.random.random(in_shape) * 100).astype(type_name_to_np_type[data_type])

    def np_polyval_grad(coeffs, x):
        coeffs_len = len(coeffs)
        coeffs_diff = [(coeffs_len - i - 1) * coeffs[i] for i in range(coeffs_len - 1)]
        np_x_diff = np.polyval(coeffs_diff, x)
        return np_x_diff

    def assert_prediction_grad(blob: tp.Numpy):
        np_x_diff = np_polyval_grad(coeffs, x)
        assert np.allclose(blob, np_x_diff, rtol=1e-5, atol=1e-5)

    @flow.global_function(type="train", function_config=func_config)
    def PolyValJob(x: tp.Numpy.Placeholder(shape=in_shape)):
        with flow.scope.placement(device_type, "0:0"):
            x += flow.get_variable(
                name="x",
                shape=in_shape,
                dtype=flow_data_type,
                initializer=flow.zeros_initializer(),
                trainable=True,
            )
        flow.watch_diff(x, assert_prediction_grad)
        out = flow.math.polyval(coeffs, x)
        with flow.scope.placement(device_type, "0:0"):
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(out)

        return out

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = PolyValJob(x).get().numpy()
    np_out = np.polyval(coeffs, x)
    assert np.allclose(of_out, np_out, rtol=1e-5, atol=1e-5)


def gen_arg_list(type):
    arg_dict = OrderedDict()
    if type == "1n2d":
        arg_dict["device_type"] = ["cpu"]
        arg_dict["device_num"] = [2]
    else:
        arg_dict["device_type"] = ["cpu"]
        arg_dict["device_num"] = [1]
    arg_dict["in_shape"] = [(2, 3)]
    arg_dict["data_type"] = ["float32"]
    arg_dict["coeffs"] = [[1.0, 2.0], [1.0, 2.0, 3.0]]
    return GenArgList(arg_dict)


def test_polyval():
    test_case = TestCase()
    for arg in gen_arg_list("1n1d"):
        compare_with_numpy(*arg)


def test_polyval_testpolyval1n2d():
    test_case = TestCase()
    for arg in gen_arg_list("1n2d"):
        compare_with_numpy(*arg)

