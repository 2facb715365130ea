"""OneFlow v0.3.4 oneflow/python/test/ops/test_deconv2d.py, ported: the program as written, "gpu" placements on "cpu"
(NHWC through transposes); TensorFlow's conv2d_transpose and its tape gradients -> np_ref_nd in float64: the
deconvolution is the input gradient (with dy = x) of the convolution from the output space, its input gradient that
convolution of loss_diff, its filter gradient that convolution's filter gradient (input loss_diff, dy = x); batch 32
-> 4; OneFlow's tolerances."""

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


def _reference(x, w, strides, padding, loss_diff):
    """tf.nn.conv2d_transpose (NHWC, filter (kh, kw, out, in)) and its gradients: the convolution of the output
    space (filter (kh, kw, out, in) read as a conv filter) gives x's shape; the deconvolution is its input
    gradient for dy = x."""
    conv_of_loss_diff, deconv, dw = conv_nd_channels_last(loss_diff, w, [strides] * 2, [1, 1], padding, 1, x)
    return _Tensor(deconv), _Tensor(conv_of_loss_diff), _Tensor(dw)


def compare_with_tensorflow(device_type, params_case, dilations, data_format):
    input_shape, output_shape, padding, strides, kernel_size = params_case
    assert data_format in ["NCHW", "NHWC"]
    out_channels = output_shape[1] if data_format == "NCHW" else output_shape[3]
    in_channels = input_shape[1] if data_format == "NCHW" else input_shape[3]
    assert device_type in ["cpu"]

    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def DeconvJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable(
                "x",
                shape=input_shape,
                dtype=flow.float,
                initializer=flow.random_uniform_initializer(minval=-10, maxval=10),
                trainable=True,
            )
            if data_format == "NCHW":
                weight = flow.get_variable(
                    "weight",
                    shape=(in_channels, out_channels, kernel_size, kernel_size),
                    dtype=flow.float,
                    initializer=flow.random_uniform_initializer(minval=-10, maxval=10),
                    trainable=True,
                )
            else:
                weight = flow.get_variable(
                    "weight",
                    shape=(in_channels, kernel_size, kernel_size, out_channels),
                    dtype=flow.float,
                    initializer=flow.random_uniform_initializer(minval=-10, maxval=10),
                    trainable=True,
                )
            loss = flow.nn.conv2d_transpose(
                x,
                weight,
                strides=strides,
                output_shape=output_shape,
                dilations=dilations,
                padding=padding,
                data_format=data_format,
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
    of_out = DeconvJob().get()
    # NumPy float64 (for TensorFlow)
    if data_format == "NCHW":
        x = test_global_storage.Get("x").transpose(0, 2, 3, 1)
        w = test_global_storage.Get("weight").transpose(2, 3, 1, 0)
        loss_diff = test_global_storage.Get("loss_diff").transpose(0, 2, 3, 1)
        tf_out, tf_x_diff, tf_weight_diff = _reference(x, w, strides, padding, loss_diff)

        assert np.allclose(
            of_out.numpy().transpose(0, 2, 3, 1), tf_out.numpy(), rtol=1e-02, atol=1e-02
        )
        assert np.allclose(
            test_global_storage.Get("x_diff").transpose(0, 2, 3, 1),
            tf_x_diff.numpy(),
            rtol=1e-4,
            atol=1e-4,
        )
        assert np.allclose(
            test_global_storage.Get("weight_diff").transpose(2, 3, 1, 0),
            tf_weight_diff.numpy(),
            rtol=1e-4,
            atol=1e-4,
        )
    else:
        x = test_global_storage.Get("x")
        w = test_global_storage.Get("weight").transpose(1, 2, 3, 0)
        loss_diff = test_global_storage.Get("loss_diff")
        tf_out, tf_x_diff, tf_weight_diff = _reference(x, w, strides, padding, loss_diff)

        assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=1e-02, atol=1e-02), (
            of_out.numpy() - tf_out.numpy()
        )
        assert np.allclose(
            test_global_storage.Get("x_diff"), tf_x_diff.numpy(), rtol=1e-02, atol=1e-02
        )
        assert np.allclose(
            test_global_storage.Get("weight_diff").transpose(1, 2, 3, 0),
            tf_weight_diff.numpy(),
            rtol=1e-2,
            atol=1e-2,
        )


def test_deconv2d_NHWC_1n1c():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    # params_case: (input_shape, output_shape, padding, stirdes, kernel_size)
    arg_dict["params_case"] = [
        ((4, 3, 3, 4), (4, 3, 3, 8), "SAME", 1, 3),
        ((4, 3, 3, 2), (4, 6, 6, 8), "SAME", 2, 4),
        ((4, 2, 2, 1), (4, 5, 5, 2), "VALID", 2, 2),
        ((4, 2, 2, 16), (4, 8, 8, 4), "VALID", 2, 5),
    ]
    arg_dict["dilations"] = [1]
    arg_dict["data_format"] = ["NHWC"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_deconv2d_NCHW_1n1c():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    # params_case: (input_shape, output_shape, padding, stirdes, kernel_size)
    arg_dict["params_case"] = [
        ((4, 4, 3, 3), (4, 8, 3, 3), "SAME", 1, 3),
        ((4, 4, 3, 3), (4, 8, 6, 6), "SAME", 2, 5),
        ((4, 1, 2, 2), (4, 2, 5, 5), "VALID", 2, 2),
        ((4, 16, 2, 2), (4, 4, 8, 8), "VALID", 2, 5),
    ]
    arg_dict["dilations"] = [1]
    arg_dict["data_format"] = ["NCHW"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)


