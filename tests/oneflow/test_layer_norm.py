"""OneFlow v0.3.4 oneflow/python/test/ops/test_layer_norm.py, ported: the program as written, "gpu" placements on "cpu"
(so the float16 and fuse_add_to_output cases, which OneFlow's test runs on the GPU only, are skipped by the test
itself); TensorFlow's keras LayerNormalization (gamma 1, beta 0) and its tape gradients of z = y + x -> NumPy
float64: xhat = (x - mean) / sqrt(var + eps), dx = (g - mean(g) - xhat mean(g xhat)) / sqrt(var + eps) + 1 with g =
dz gamma, gamma_diff = sum(dz xhat), beta_diff = sum(dz) over the batch axes."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, TestCase, test_global_storage, type_name_to_flow_type, type_name_to_np_type


class _Tensor:
    """What the test reads of a TensorFlow tensor: ``.numpy()``."""

    def __init__(self, a):
        self._a = a

    def numpy(self):
        return self._a


def test_layer_norm():
    _ = TestCase()
    confs = [
        {"x_shape": (40, 64), "begin_norm_axis": -1, "begin_params_axis": -1},
    ]
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["confs"] = confs
    arg_dict["data_type"] = ["float32", "float16"]
    arg_dict["trainable"] = [True, False]
    arg_dict["center"] = [True, False]
    arg_dict["scale"] = [True, False]
    arg_dict["epsilon"] = [1e-5, 1e-10]
    arg_dict["fuse_add_to_output"] = [True, False]

    for case in GenArgList(arg_dict):
        (
            device_type,
            confs,
            data_type,
            trainable,
            center,
            scale,
            epsilon,
            fuse_add_to_output,
        ) = case
        if device_type == "cpu" and data_type == "float16":
            continue
        if device_type == "cpu" and fuse_add_to_output:
            continue
        x_shape = confs["x_shape"]
        begin_norm_axis = confs["begin_norm_axis"]
        begin_params_axis = confs["begin_params_axis"]
        flow.clear_default_session()
        assert (
            begin_norm_axis == begin_params_axis
        ), "tf doesn't support a dedicated begin_params_axis"
        # Random inputs
        if data_type == "float16":
            x = (
                np.random.uniform(low=-1, high=1, size=x_shape)
                .astype(np.float16)
                .astype(np.float32)
            )
        else:
            x = np.random.uniform(low=-1, high=1, size=x_shape).astype(
                type_name_to_np_type[data_type]
            )

        dim = len(x.shape) - 2

        # NumPy float64 results (for TensorFlow's)
        x64 = x.astype(np.float64)
        red = tuple(range(begin_norm_axis % len(x_shape), len(x_shape)))
        batch = tuple(range(begin_params_axis % len(x_shape)))
        mean, var = x64.mean(red, keepdims=True), x64.var(red, keepdims=True)
        xhat = (x64 - mean) / np.sqrt(var + epsilon)
        dz = np.ones_like(x64)
        g = dz * 1.0  # gamma starts at 1
        dx_np = (g - g.mean(red, keepdims=True) - xhat * (g * xhat).mean(red, keepdims=True)) / np.sqrt(
            var + epsilon) + dz
        y_tf, dx_tf = _Tensor(xhat), _Tensor(dx_np)
        if trainable:
            tf_gamma_diff, tf_beta_diff = _Tensor((dz * xhat).sum(batch)), _Tensor(dz.sum(batch))

        def assert_grad(b):
            diff = dx_tf.numpy() - b.numpy()
            max_diff = np.max(np.abs(diff))
            if data_type == "float16":
                tolerance = 3e-3
            else:
                tolerance = 1e-5
            assert np.allclose(
                dx_tf.numpy(), b.numpy(), rtol=tolerance, atol=tolerance
            ), (
                case,
                max_diff,
            )

        def assert_grad_gamma(b):
            diff = tf_gamma_diff.numpy() - b.numpy()
            max_diff = np.max(np.abs(diff))
            assert np.allclose(
                tf_gamma_diff.numpy(), b.numpy(), rtol=1e-4, atol=1e-4
            ), (
                case,
                max_diff,
            )

        def assert_grad_beta(b):
            diff = tf_beta_diff.numpy() - b.numpy()
            max_diff = np.max(np.abs(diff))
            assert np.allclose(
                tf_beta_diff.numpy(), b.numpy(), rtol=1e-5, atol=1e-5
            ), (
                case,
                max_diff,
            )

        # 1F results
        if data_type == "float16":
            dtype = flow.float
        else:
            dtype = type_name_to_flow_type[data_type]

        func_config = flow.FunctionConfig()
        func_config.default_data_type(flow.float)
        func_config.enable_fuse_add_to_output(fuse_add_to_output)

        @flow.global_function(type="train", function_config=func_config)
        def test_job(x: oft.Numpy.Placeholder(x_shape, dtype=dtype)):
            v = flow.get_variable(
                "x",
                shape=x_shape,
                dtype=dtype,
                initializer=flow.constant_initializer(0),
                trainable=True,
            )
            flow.watch_diff(v, assert_grad)
            x += v
            if data_type == "float16":
                x = flow.cast(x, dtype=flow.float16)
            with flow.scope.placement(device_type, "0:0"):
                param_shape = x.shape[begin_params_axis:]
                gamma = None
                beta = None
                if center:
                    with flow.scope.namespace("LayerNorm"):
                        beta = flow.get_variable(
                            name="beta",
                            shape=param_shape,
                            dtype=flow.float,
                            initializer=flow.constant_initializer(0.0),
                            trainable=trainable,
                            model_name="beta",
                            reuse=False,
                        )
                        if trainable:
                            flow.watch_diff(beta, assert_grad_beta)
                        if data_type == "float16":
                            beta = flow.cast(beta, dtype=flow.float16)

                if scale:
                    with flow.scope.namespace("LayerNorm"):
                        gamma = flow.get_variable(
                            name="gamma",
                            shape=param_shape,
                            dtype=flow.float,
                            initializer=flow.constant_initializer(1.0),
                            trainable=trainable,
                            model_name="gamma",
                            reuse=False,
                        )
                        if trainable:
                            if data_type == "float16":
                                flow.watch_diff(
                                    gamma, test_global_storage.Setter("gamma_diff")
                                )
                            else:
                                flow.watch_diff(gamma, assert_grad_gamma)
                        if data_type == "float16":
                            gamma = flow.cast(gamma, dtype=flow.float16)
                x = flow.identity(x)

                y = flow.nn.layer_norm(
                    x,
                    gamma=gamma,
                    beta=beta,
                    begin_norm_axis=begin_norm_axis,
                    begin_params_axis=begin_params_axis,
                    epsilon=epsilon,
                )
                z = y + x
            if data_type == "float16":
                y = flow.cast(y, dtype=flow.float)
                z = flow.cast(z, dtype=flow.float)

            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(z)
            return y

        check_point = flow.train.CheckPoint()
        check_point.init()
        y = test_job(x).get()

        assert y.numpy().shape == y_tf.numpy().shape, (
            y.numpy().shape,
            y_tf.numpy().shape,
        )
        diff = y.numpy() - y_tf.numpy()
        max_diff = np.max(np.abs(diff))
        assert np.allclose(y.numpy(), y_tf.numpy(), rtol=1e-5, atol=2e-3), (
            case,
            max_diff,
        )
        if data_type == "float16" and trainable and scale:
            np_dy = np.ones(x.shape).astype(np.float32)
            np_gamma_diff = np.sum(
                np_dy * y.numpy().astype(np.float32), axis=0
            ).astype(np.float16)
            max_diff = np.max(
                np.abs(
                    np_gamma_diff
                    - test_global_storage.Get("gamma_diff").astype(np.float16)
                )
            )
            assert np.allclose(
                np_gamma_diff,
                test_global_storage.Get("gamma_diff").astype(np.float16),
                rtol=5e-2,
                atol=5e-2,
            ), (
                case,
                max_diff,
            )


