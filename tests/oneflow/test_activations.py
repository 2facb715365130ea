"""OneFlow v0.3.4 oneflow/python/test/ops/test_activations.py, ported: CPU only, TensorFlow -> NumPy float64 (values
and analytic derivatives), (1024, 1024) reduced to (256, 256); the float16 (GPU, auto mixed precision) leg dropped."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, test_global_storage


def _np_act(kind, x):
    if kind == "relu":
        return np.maximum(x, 0), (x > 0).astype(np.float64)
    if kind == "sigmoid":
        y = 1.0 / (1.0 + np.exp(-x))
        return y, y * (1 - y)
    y = np.tanh(x)
    return y, 1 - y * y


def compare_with_tensorflow(device_type, activation_type, shape, data_type):
    assert device_type in ["gpu", "cpu"]
    flow.clear_default_session()
    flow.config.enable_debug_mode(True)
    func_config = flow.FunctionConfig()
    func_config.default_data_type(data_type)
    of_activation_map = {"relu": flow.nn.relu, "sigmoid": flow.math.sigmoid, "tanh": flow.math.tanh}

    @flow.global_function(type="train", function_config=func_config)
    def ActivationJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("x", shape=shape, dtype=data_type,
                                  initializer=flow.random_uniform_initializer(minval=-10, maxval=10),
                                  trainable=True)
            loss = of_activation_map[activation_type](x)
            lr_scheduler = flow.optimizer.PiecewiseConstantScheduler([], [1e-4])
            flow.optimizer.SGD(lr_scheduler, momentum=0).minimize(loss)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = ActivationJob().get()
    x = test_global_storage.Get("x").astype(np.float64)
    y, dydx = _np_act(activation_type, x)
    ref_dx = test_global_storage.Get("loss_diff") * dydx
    rtol, atol = 1e-5, 1e-5
    assert np.allclose(of_out.numpy(), y, rtol, atol)
    assert np.allclose(test_global_storage.Get("x_diff"), ref_dx, rtol, atol)


def test_activations():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["activation_type"] = ["relu", "sigmoid", "tanh"]
    arg_dict["shape"] = [(256, 256)]
    arg_dict["data_type"] = [flow.float, flow.double]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)
