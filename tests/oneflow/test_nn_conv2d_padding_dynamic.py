"""OneFlow v0.3.4 oneflow/python/test/ops/test_nn_conv2d_padding_dynamic.py, ported: "gpu" -> "cpu"; TensorFlow's
conv2d and tape gradients -> np_ref_nd.conv_nd_channels_last in float64; shapes reduced (batch 10 -> 2, 64 filters
-> 16, the ListNumpy placeholder (10, 3, 100, 100) -> (2, 3, 20, 20)). OneFlow skips the class in its CI
("skip_for_ci"); it runs here. The (2, 3, 10, 10) and (2, 3, 11, 11) pieces are dynamic blobs, trained."""

from collections import OrderedDict

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as oft

from .np_ref_nd import conv_nd_channels_last
from .of_util import GenArgList

global_storage = {}


def global_storage_setter(name):
    global global_storage

    def _set(x):
        global_storage[name] = x

    return _set


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
    device_type,
    x_shape,
    filters,
    kernel_size,
    groups,
    of_padding="SAME",
    tf_padding="SAME",
    stride=1,
    data_format="NCHW",
):
    assert device_type in ["gpu", "cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    func_config.default_logical_view(flow.scope.mirrored_view())

    if data_format == "NCHW":
        xy_data_transpose = (0, 2, 3, 1)
        weight_data_transpose = (2, 3, 1, 0)
    else:
        xy_data_transpose = (0, 1, 2, 3)
        weight_data_transpose = (1, 2, 3, 0)

    @flow.global_function(type="train", function_config=func_config)
    def DynamicConvJob(x: oft.ListNumpy.Placeholder((2, 3, 20, 20))):
        with flow.scope.placement(device_type, "0:0"):
            x_var = flow.get_variable(
                name="v1",
                shape=(1,),
                dtype=flow.float,
                initializer=flow.zeros_initializer(),
            )
            x_var = flow.cast_to_current_logical_view(x_var)
            x += x_var
            if data_format == "NCHW":
                weight_shape = (filters, x_shape[1] // groups, kernel_size, kernel_size)
            else:
                weight_shape = (filters, kernel_size, kernel_size, x_shape[3] // groups)
            weight = flow.get_variable(
                "conv-weight",
                shape=weight_shape,
                dtype=flow.float,
                initializer=flow.random_uniform_initializer(minval=0, maxval=100),
            )
            weight = flow.cast_to_current_logical_view(weight)
            loss = flow.nn.conv2d(
                x,
                weight,
                strides=[stride, stride],
                padding=of_padding,
                data_format=data_format,
                dilations=[1, 1],
                groups=groups,
            )
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(loss)

            flow.watch(x, global_storage_setter("x"))
            flow.watch_diff(x, global_storage_setter("x_diff"))
            flow.watch(weight, global_storage_setter("weight"))
            flow.watch_diff(weight, global_storage_setter("weight_diff"))
            flow.watch(loss, global_storage_setter("loss"))
            flow.watch_diff(loss, global_storage_setter("loss_diff"))

            return loss

    # OneFlow
    check_point = flow.train.CheckPoint()
    check_point.init()
    data = [np.random.rand(*x_shape).astype(np.float32)]
    of_out = DynamicConvJob(data).get().numpy_list()[0]
    # NumPy float64 (for TensorFlow)
    x = data[0].transpose(xy_data_transpose)
    weight = global_storage["weight"].numpy().transpose(weight_data_transpose)
    loss_diff = global_storage["loss_diff"].numpy_list()[0].transpose(xy_data_transpose)
    # TensorFlow's explicit padding is one (before, after) pair per NHWC dimension
    pads = tf_padding if isinstance(tf_padding, str) else tf_padding[1:3]
    tf_out, tf_x_diff, tf_weight_diff = _reference(x, weight, [stride, stride], [1, 1], pads, groups, loss_diff)

    idx = np.where(np.abs(of_out.transpose(xy_data_transpose) - tf_out.numpy()) > 5e-4)
    assert np.allclose(
        of_out.transpose(xy_data_transpose), tf_out.numpy(), rtol=1e-3, atol=1e-3,
    )

    rtol = 1e-4
    atol = 1e-4
    if device_type == "cpu":
        rtol *= 100
        atol *= 100
    assert np.allclose(
        global_storage["x_diff"].numpy_list()[0].transpose(xy_data_transpose),
        tf_x_diff.numpy(),
        rtol=rtol,
        atol=atol,
    ), (
        global_storage["x_diff"].numpy_list()[0].transpose(xy_data_transpose)
        - tf_x_diff.numpy()
    )
    assert np.allclose(
        global_storage["weight_diff"].numpy().transpose(weight_data_transpose),
        tf_weight_diff.numpy(),
        rtol=5e-3,
        atol=5e-3,
    )


def test_padding_valid():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 3, 10, 10), (2, 3, 11, 11)]
    arg_dict["filters"] = [16]
    arg_dict["kernel_size"] = [3, 2]
    arg_dict["groups"] = [1]
    arg_dict["of_padding"] = ["VALID"]
    arg_dict["tf_padding"] = ["VALID"]
    arg_dict["stride"] = [1, 2]
    arg_dict["data_format"] = ["NCHW"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

@pytest.mark.xfail(strict=True, reason="as OneFlow: nn.conv2d's calc_conv_padding computes the SAME pads from the "
                   "placeholder's static shape when the job is traced, so an (11, 11) piece with stride 2 gets the pads "
                   "of a (20, 20) one and a 5x5 output where TensorFlow's SAME gives 6x6 (OneFlow's CI skips this class)")
def test_padding_same():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 3, 10, 10), (2, 3, 11, 11)]
    arg_dict["filters"] = [16]
    arg_dict["kernel_size"] = [3, 2]
    arg_dict["groups"] = [1]
    arg_dict["of_padding"] = ["SAME_UPPER"]
    arg_dict["tf_padding"] = ["SAME"]
    arg_dict["stride"] = [1, 2]
    arg_dict["data_format"] = ["NCHW"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_pad_list1():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 3, 10, 10), (2, 3, 11, 11)]
    arg_dict["filters"] = [16]
    arg_dict["kernel_size"] = [3, 2]
    arg_dict["groups"] = [1]
    arg_dict["of_padding"] = [[[0, 0], [0, 0], [0, 1], [1, 0]]]
    arg_dict["tf_padding"] = [[[0, 0], [0, 1], [1, 0], [0, 0]]]
    arg_dict["stride"] = [1, 2]
    arg_dict["data_format"] = ["NCHW"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_pad_list2():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 3, 10, 10), (2, 3, 11, 11)]
    arg_dict["filters"] = [16]
    arg_dict["kernel_size"] = [3, 2]
    arg_dict["groups"] = [1]
    arg_dict["of_padding"] = [[[0, 0], [0, 0], [1, 1], [1, 1]]]
    arg_dict["tf_padding"] = [[[0, 0], [1, 1], [1, 1], [0, 0]]]
    arg_dict["stride"] = [1, 2]
    arg_dict["data_format"] = ["NCHW"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_pad_list3():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 3, 10, 10), (2, 3, 11, 11)]
    arg_dict["filters"] = [16]
    arg_dict["kernel_size"] = [3, 2]
    arg_dict["groups"] = [1]
    arg_dict["of_padding"] = [[[0, 0], [0, 0], [1, 0], [1, 0]]]
    arg_dict["tf_padding"] = [[[0, 0], [1, 0], [1, 0], [0, 0]]]
    arg_dict["stride"] = [1, 2]
    arg_dict["data_format"] = ["NCHW"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_pad_list4():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(2, 3, 10, 10), (2, 3, 11, 11)]
    arg_dict["filters"] = [16]
    arg_dict["kernel_size"] = [3, 2]
    arg_dict["groups"] = [1]
    arg_dict["of_padding"] = [[[0, 0], [0, 0], [10, 2], [10, 2]]]
    arg_dict["tf_padding"] = [[[0, 0], [10, 2], [10, 2], [0, 0]]]
    arg_dict["stride"] = [1, 2]
    arg_dict["data_format"] = ["NCHW"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)
