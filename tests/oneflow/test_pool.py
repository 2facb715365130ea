"""OneFlow v0.3.4 oneflow/python/test/ops/test_pool.py, ported: the program mechanically, "gpu" as "cpu"; TensorFlow's
avg/max pooling -> np_ref.pool2d_nchw in float64 (values and the input gradient of a ones output gradient; for NHWC
on the transposed input). OneFlow loops over all its pool_confs in one test; here the 2-D NCHW and NHWC confs run in
test_pool and the 3-D confs in test_pool_3d (np_ref_nd.pool_nd_channels_first)."""

import collections.abc
from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .np_ref import pool2d_nchw
from .np_ref_nd import pool_nd_channels_first
from .of_util import GenArgList, type_name_to_flow_type, type_name_to_np_type

pool_confs = [
    {
        "x_shape": (1, 1, 6, 6),
        "ksize": 1,
        "strides": 1,
        "padding": "VALID",
        "data_format": "NCHW",
    },
    {
        "x_shape": (1, 3, 7, 7),
        "ksize": 3,
        "strides": 2,
        "padding": "SAME",
        "data_format": "NCHW",
    },
    {
        "x_shape": (1, 7, 7, 3),
        "ksize": 3,
        "strides": 2,
        "padding": "SAME",
        "data_format": "NHWC",
    },
    {
        "x_shape": (1, 5, 6, 6),
        "ksize": 3,
        "strides": 2,
        "padding": "VALID",
        "data_format": "NCHW",
    },
    {
        "x_shape": (1, 7, 5, 5),
        "ksize": 3,
        "strides": 2,
        "padding": "SAME",
        "data_format": "NCHW",
    },
    {
        "x_shape": (1, 3, 3, 3),
        "ksize": 1,
        "strides": 1,
        "padding": "VALID",
        "data_format": "NCHW",
    },
    {
        "x_shape": (1, 1, 9, 9),
        "ksize": 2,
        "strides": 2,
        "padding": "VALID",
        "data_format": "NCHW",
    },
    {
        "x_shape": (1, 9, 9, 1),
        "ksize": 2,
        "strides": 2,
        "padding": "VALID",
        "data_format": "NHWC",
    },
    {
        "x_shape": (1, 1, 9, 9, 9),
        "ksize": 2,
        "strides": 2,
        "padding": "VALID",
        "data_format": "NCDHW",
    },
    {
        "x_shape": (1, 7, 5, 5, 5),
        "ksize": 3,
        "strides": 2,
        "padding": "SAME",
        "data_format": "NCDHW",
    },
    {
        "x_shape": (1, 5, 5, 5, 7),
        "ksize": 3,
        "strides": 2,
        "padding": "VALID",
        "data_format": "NDHWC",
    },
    {
        "x_shape": (1, 3, 3, 3, 3),
        "ksize": 1,
        "strides": 1,
        "padding": "VALID",
        "data_format": "NCDHW",
    },
]


def _GetSequence(value, n, name):
    """Formats value from input"""
    if value is None:
        value = [1]
    elif not isinstance(value, collections.abc.Sized):
        value = [value]

    current_n = len(value)
    if current_n == 1:
        return list(value * n)
    elif current_n == n:
        return list(value)
    else:
        raise ValueError(
            f"{name} should be of length 1 or {n} but was {current_n}"
        )
def _run_pool(pool_confs):
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["pool_conf"] = pool_confs
    arg_dict["data_type"] = ["float32"]
    arg_dict["pooling_type"] = ["AVG", "MAX"]
    arg_dict["is_dynamic"] = [True, False]

    for case in GenArgList(arg_dict):
        (device_type, pool_conf, data_type, pooling_type, is_dynamic) = case
        x_shape = pool_conf["x_shape"]
        ksize = pool_conf["ksize"]
        strides = pool_conf["strides"]
        padding = pool_conf["padding"]
        data_format = pool_conf["data_format"]
        flow.clear_default_session()

        # Random inputs
        x = np.random.randn(*x_shape).astype(type_name_to_np_type[data_type])
        dim = len(x.shape) - 2

        # TODO: these cases will fail in old implementation
        if dim == 3 and data_format == "NDHWC":
            continue
        # TF results
        strides = _GetSequence(strides, dim, "strides")
        if data_format == "NHWC":  # the NCHW reference on the transposed input, transposed back
            y_ref, dx_ref = (a.transpose(0, 2, 3, 1) for a in pool2d_nchw(x.transpose(0, 3, 1, 2), ksize, strides[0],
                                                                          padding, pooling_type))
        elif dim == 3:  # the 3-D confs: np_ref_nd's N-d pooling
            y_ref, dx_ref = pool_nd_channels_first(x, ksize, strides, padding, pooling_type)
        else:
            y_ref, dx_ref = pool2d_nchw(x, ksize, strides[0], padding, pooling_type)

        def assert_grad(b):
            # TODO(hanbinbin): In eager mode, cannot derive b's is_dynamic correctly, therefore, using if .. else ...
            # Don't warry, is_dynamic will be removed in the next refactor and the problem will gone.
            if b.is_dynamic:
                b_ndarray = b.numpy_list()[0]
            else:
                b_ndarray = b.numpy()
            assert np.allclose(dx_ref, b_ndarray), (
                case,
                dx_ref,
                b_ndarray,
            )

        # 1F results
        dtype = type_name_to_flow_type[data_type]

        func_config = flow.FunctionConfig()
        func_config.default_data_type(flow.float)

        tensor_def = None
        if is_dynamic:
            func_config.default_logical_view(flow.scope.mirrored_view())
            tensor_def = oft.ListNumpy.Placeholder
        else:
            tensor_def = oft.Numpy.Placeholder

        @flow.global_function(type="train", function_config=func_config)
        def pooling_job(x: tensor_def(x_shape, dtype=dtype)):
            v = flow.get_variable(
                "x",
                shape=x_shape,
                dtype=dtype,
                initializer=flow.constant_initializer(0),
                trainable=True,
            )
            v = flow.cast_to_current_logical_view(v)
            flow.watch_diff(v, assert_grad)
            x += v
            with flow.scope.placement(device_type, "0:0"):
                pooling_f = None
                if pooling_type == "AVG":
                    pooling_f = getattr(flow.nn, f"avg_pool{dim}d")
                elif pooling_type == "MAX":
                    pooling_f = getattr(flow.nn, f"max_pool{dim}d")
                else:
                    raise ValueError("pooling_type must be AVG or MAX")
                y = pooling_f(
                    x,
                    ksize=ksize,
                    strides=strides,
                    padding=padding,
                    data_format=data_format,
                )
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(y)
            return y

        if is_dynamic:
            x = [x]
        y = pooling_job(x).get()
        y_ndarray = None
        if is_dynamic:
            y_ndarray = y.numpy_list()[0]
        else:
            y_ndarray = y.numpy()
        assert y_ndarray.shape == y_ref.shape, (
            y_ndarray.shape,
            y_ref.shape,
        )
        assert np.allclose(y_ndarray, y_ref, rtol=1e-5, atol=1e-5), (
            case,
            y_ndarray - y_ref,
        )


def test_pool():
    _run_pool([c for c in pool_confs if c["data_format"] in ("NCHW", "NHWC")])


def test_pool_3d():
    _run_pool([c for c in pool_confs if c["data_format"] not in ("NCHW", "NHWC")])
