"""OneFlow v0.3.4 oneflow/python/test/ops/test_compat_conv2d.py, ported: the program as written, "gpu" placements on
"cpu"; TensorFlow's channels-last convolution (and its grouped split/concat) and tape gradients ->
np_ref_nd.conv_nd_channels_last in float64 (values, input and filter gradients); shapes reduced: (10, 32, 20, 20) ->
(2, 32, 10, 10); (10, 32, 226, 226) -> (2, 32, 12, 12); OneFlow's tolerances."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .np_ref_nd import conv_nd_channels_last
from .of_util import GenArgList, TestCase, test_global_storage


class _Tensor:
    """What the test reads of a TensorFlow tensor: ``.numpy()``."""

    def __init__(self, a):
        self._a = a

    def numpy(self):
        return self._a


def _reference(x, weight, strides, dilations, padding, groups, loss_diff):
    """TensorFlow's channels-last convolution and its tape gradients, in NumPy float64 (np_ref_nd)."""
    y, dx, dw = conv_nd_channels_last(x, weight, strides, dilations, padding, groups, loss_diff)
    return _Tensor(y), _Tensor(dx), _Tensor(dw)


def compare_with_tensorflow(
    device_type, x_shape, filters, kernel_size, groups, padding="VALID", stride=1
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

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
            weight_shape = (
                filters,
                int(x.shape[1] / groups),
                kernel_size,
                kernel_size,
            )
            weight = flow.get_variable(
                "conv-weight",
                shape=weight_shape,
                dtype=flow.float,
                initializer=flow.random_uniform_initializer(minval=0, maxval=100),
            )
            loss = flow.nn.compat_conv2d(
                x,
                weight,
                strides=[stride, stride],
                padding=padding,
                data_format="NCHW",
                dilations=[1, 1],
                groups=groups,
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
    # NumPy float64 (for TensorFlow)
    x = test_global_storage.Get("x").transpose(0, 2, 3, 1)
    weight = test_global_storage.Get("weight").transpose(2, 3, 1, 0)
    loss_diff = test_global_storage.Get("loss_diff").transpose(0, 2, 3, 1)
    # grouped_convolution2D in OneFlow's test is VALID with stride 1 whatever it is asked
    tf_out, tf_x_diff, tf_weight_diff = _reference(
        x, weight, [stride] * 2 if groups == 1 else [1, 1], [1, 1], padding if groups == 1 else "VALID",
        groups, loss_diff)

    assert np.allclose(
        of_out.numpy().transpose(0, 2, 3, 1), tf_out.numpy(), rtol=5e-3, atol=5e-3
    )
    assert np.allclose(
        test_global_storage.Get("x_diff").transpose(0, 2, 3, 1),
        tf_x_diff.numpy(),
        rtol=5e-3,
        atol=5e-3,
    )
    assert np.allclose(
        test_global_storage.Get("weight_diff").transpose(2, 3, 1, 0),
        tf_weight_diff.numpy(),
        rtol=5e-3,
        atol=5e-3,
    )


def test_conv1():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 32, 10, 10)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [3]
    arg_dict["groups"] = [1]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv2():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 32, 10, 10)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [3]
    arg_dict["groups"] = [4]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv3():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 32, 10, 10)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [3]
    arg_dict["groups"] = [8]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv4():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 32, 10, 10)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [3]
    arg_dict["groups"] = [32]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv5():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 32, 10, 10)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [1]
    arg_dict["groups"] = [8]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv6():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 32, 10, 10)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [1]
    arg_dict["groups"] = [32]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv7():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 4, 8, 8)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [4]
    arg_dict["groups"] = [1]
    arg_dict["padding"] = ["SAME"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_conv8():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 4, 8, 8)]
    arg_dict["filters"] = [64]
    arg_dict["kernel_size"] = [5]
    arg_dict["groups"] = [1]
    arg_dict["padding"] = ["SAME"]
    arg_dict["stride"] = [2]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)


