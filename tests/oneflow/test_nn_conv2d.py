"""OneFlow v0.3.4 oneflow/python/test/ops/test_nn_conv2d.py, ported: programs mechanically, "gpu" as "cpu";
TensorFlow's conv2d (and its grouped split/concat) -> np_ref.conv2d_nhwc in float64 (values, input and filter
gradients); shapes reduced ((10, 32, 226, 226) -> (1, 32, 12, 12); (10, 32, 20, 20) -> (1, 32, 8, 8);
(10, 10, 10, 32) -> (2, 10, 10, 32)); OneFlow's
5e-3 tolerance."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .np_ref import conv2d_nhwc
from .of_util import GenArgList, TestCase, test_global_storage


def compare_with_tensorflow(
    device_type,
    x_shape,
    filters,
    kernel_size,
    groups,
    data_format="NCHW",
    padding="VALID",
    stride=1,
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    if data_format == "NCHW":
        xy_data_transpose = (0, 2, 3, 1)
        weight_data_transpose = (2, 3, 1, 0)
    else:
        xy_data_transpose = (0, 1, 2, 3)
        weight_data_transpose = (1, 2, 3, 0)

    @flow.global_function(type="train", function_config=func_config)
    def ConvJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable(
                "x",
                shape=x_shape,
                dtype=flow.float,
                initializer=flow.random_uniform_initializer(minval=0, maxval=100),
                trainable=True,
            )
            if data_format == "NCHW":
                weight_shape = (filters, x.shape[1] // groups, kernel_size, kernel_size)
            else:
                weight_shape = (filters, kernel_size, kernel_size, x.shape[3] // groups)
            weight = flow.get_variable(
                "conv-weight",
                shape=weight_shape,
                dtype=flow.float,
                initializer=flow.random_uniform_initializer(minval=0, maxval=100),
            )
            loss = flow.nn.conv2d(
                x,
                weight,
                strides=[stride, stride],
                padding=padding,
                data_format=data_format,
                dilations=[1, 1],
                groups=groups,
                name="conv",
            )
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(loss)

            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(weight, test_global_storage.Setter("weight"))
            flow.watch_diff(weight, test_global_storage.Setter("weight_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))

            return loss

    # OneFlow
    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = ConvJob().get()

    x = test_global_storage.Get("x").transpose(xy_data_transpose)
    weight = test_global_storage.Get("weight").transpose(weight_data_transpose)
    loss_diff = test_global_storage.Get("loss_diff").transpose(xy_data_transpose)
    ref_out, ref_x_diff, ref_weight_diff = conv2d_nhwc(x, weight, stride, padding, groups, loss_diff)
    max_diff = np.max(np.absolute(of_out.numpy().transpose(xy_data_transpose) - ref_out))
    assert np.allclose(of_out.numpy().transpose(xy_data_transpose), ref_out, rtol=5e-3, atol=5e-3), max_diff
    assert np.allclose(test_global_storage.Get("x_diff").transpose(xy_data_transpose), ref_x_diff, rtol=5e-3,
                       atol=5e-3)
    assert np.allclose(test_global_storage.Get("weight_diff").transpose(weight_data_transpose), ref_weight_diff,
                       rtol=5e-3, atol=5e-3)
def test_cpu1():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 10, 10, 32)]
    arg_dict["filters"] = [128]
    arg_dict["kernel_size"] = [1]
    arg_dict["groups"] = [32]
    arg_dict["data_format"] = ["NHWC"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_cpu2():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(1, 32, 12, 12)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [1]
    arg_dict["groups"] = [4]
    arg_dict["data_format"] = ["NCHW"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_cpu3():
    test_case = TestCase()
    return
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(1, 32, 8, 8)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [5]
    arg_dict["groups"] = [1]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv1():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(1, 32, 8, 8)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [3]
    arg_dict["groups"] = [32]
    arg_dict["data_format"] = ["NCHW"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv2():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(1, 32, 8, 8)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [3]
    arg_dict["groups"] = [4]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv3():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(1, 32, 8, 8)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [3]
    arg_dict["groups"] = [8]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv4():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(1, 32, 8, 8)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [3]
    arg_dict["groups"] = [32]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv5():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(1, 32, 8, 8)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [1]
    arg_dict["groups"] = [8]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv6():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(1, 32, 8, 8)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [1]
    arg_dict["groups"] = [32]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)
