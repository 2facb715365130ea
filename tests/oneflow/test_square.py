"""OneFlow v0.3.4 oneflow/python/test/ops/test_square.py, ported: CPU for "gpu", TensorFlow -> NumPy float64."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, test_global_storage


def compare_with_tensorflow(device_type, x_shape):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def SquareJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("x", shape=x_shape, dtype=flow.float,
                                  initializer=flow.random_uniform_initializer(minval=-10, maxval=10), trainable=True)
            loss = flow.math.square(x)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(loss)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = SquareJob().get()
    x = test_global_storage.Get("x").astype(np.float64)
    ref_dx = test_global_storage.Get("loss_diff") * 2 * x
    assert np.allclose(of_out.numpy(), x * x, rtol=1e-5, atol=1e-5)
    assert np.allclose(test_global_storage.Get("x_diff"), ref_dx, rtol=1e-5, atol=1e-5)


def test_square():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(10, 20, 30)]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)
