"""OneFlow v0.3.4 oneflow/python/test/ops/test_upsample.py, ported: the program as written, "gpu" placements on "cpu"
(OneFlow's upsample kernels are GPU-only; flowlab's run on both); TensorFlow's keras UpSampling2D (nearest, and
bilinear = tf.image.resize with half-pixel centres) and its tape gradient -> NumPy float64 written from those
definitions: source row (i + 0.5) / scale - 0.5, clamped at the edges, linear weights; nearest picks floor(i /
scale)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, TestCase, test_global_storage, type_name_to_flow_type


class _Tensor:
    """What the test reads of a TensorFlow tensor: ``.numpy()``."""

    def __init__(self, a):
        self._a = a

    def numpy(self):
        return self._a


def _resize_matrix(size, scale, interpolation):
    """The (size * scale, size) matrix of TensorFlow's resize along one axis: nearest picks floor(i / scale);
    bilinear (half-pixel centres) reads src = (i + 0.5) / scale - 0.5, clamped to [0, size - 1], from its two
    neighbours with linear weights. Its transpose is the gradient."""
    m = np.zeros((size * scale, size))
    for i in range(size * scale):
        if interpolation == "nearest":
            m[i, i // scale] = 1.0
            continue
        src = min(max((i + 0.5) / scale - 0.5, 0.0), size - 1.0)
        lo = int(np.floor(src))
        hi = min(lo + 1, size - 1)
        m[i, lo] += 1.0 - (src - lo)
        m[i, hi] += src - lo
    return m


def compare_with_tensorflow(
    device_type, input_shape, dtype, size, data_format, interpolation
):
    assert device_type in ["cpu"]
    flow.clear_default_session()

    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def UpsampleJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable(
                "input",
                shape=input_shape,
                dtype=type_name_to_flow_type[dtype],
                initializer=flow.random_uniform_initializer(minval=2, maxval=5),
                trainable=True,
            )

            loss = flow.layers.upsample_2d(
                x, size=size, data_format=data_format, interpolation=interpolation
            )
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(loss)

            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))

            return loss

    # OneFlow
    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = UpsampleJob().get()
    channel_pos = "channels_first" if data_format.startswith("NC") else "channels_last"
    # NumPy float64 (for TensorFlow's UpSampling2D)
    x = test_global_storage.Get("x").astype(np.float64)
    loss_diff = test_global_storage.Get("loss_diff").astype(np.float64)
    if data_format == "NHWC":
        x, loss_diff = x.transpose(0, 3, 1, 2), loss_diff.transpose(0, 3, 1, 2)
    hs, ws = (size, size) if isinstance(size, int) else size
    mh, mw = _resize_matrix(x.shape[2], hs, interpolation), _resize_matrix(x.shape[3], ws, interpolation)
    y = np.einsum("ih,nchw,jw->ncij", mh, x, mw)
    dx = np.einsum("ih,ncij,jw->nchw", mh, loss_diff, mw)
    if data_format == "NHWC":
        y, dx = y.transpose(0, 2, 3, 1), dx.transpose(0, 2, 3, 1)
    tf_out, tf_x_diff = _Tensor(y), _Tensor(dx)
    assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=1e-5, atol=1e-5)
    assert np.allclose(
        test_global_storage.Get("x_diff"), tf_x_diff.numpy(), rtol=1e-5, atol=1e-5
    )


def test_upsample():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(2, 11, 12, 13)]
    arg_dict["dtype"] = ["float32", "double"]
    arg_dict["size"] = [(2, 2), 3, (1, 2)]
    arg_dict["data_format"] = ["NCHW", "NHWC"]
    arg_dict["interpolation"] = ["nearest", "bilinear"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)


