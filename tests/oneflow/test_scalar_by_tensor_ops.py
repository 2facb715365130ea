"""OneFlow v0.3.4 oneflow/python/test/ops/test_scalar_by_tensor_ops.py, ported: programs mechanically, "gpu" as
"cpu"; TensorFlow's x (op) y with y of shape (1,) -> NumPy float64 (dx = dy * d(op)/dx; dy_scalar = sum of dy * d(op)/dy)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, TestCase, test_global_storage


def compare_with_tensorflow(device_type, data_type, x_shape, case):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def ScalarAddByTensorJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable(
                "x",
                shape=x_shape,
                dtype=flow.float,
                initializer=flow.random_uniform_initializer(minval=0, maxval=100),
                trainable=True,
            )
            y = flow.get_variable(
                "y",
                shape=(1,),
                dtype=flow.float,
                initializer=flow.random_uniform_initializer(minval=0, maxval=100),
                trainable=True,
            )
            if case == "add":
                loss = flow.math.add(x, y)
            elif case == "sub":
                loss = flow.math.subtract(x, y)
            elif case == "mul":
                loss = flow.math.multiply(x, y)
            elif case == "div":
                loss = flow.math.divide(x, y)
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(loss)

            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch(y, test_global_storage.Setter("y"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch_diff(y, test_global_storage.Setter("y_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))

            return loss

    # OneFlow
    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = ScalarAddByTensorJob().get()
    x = test_global_storage.Get("x").astype(np.float64)
    y = test_global_storage.Get("y").astype(np.float64)
    dy = test_global_storage.Get("loss_diff").astype(np.float64)
    ref_out, dfdx, dfdy = {
        "add": (x + y, np.ones_like(x), np.ones_like(x)),
        "sub": (x - y, np.ones_like(x), -np.ones_like(x)),
        "mul": (x * y, np.broadcast_to(y, x.shape), x),
        "div": (x / y, np.broadcast_to(1 / y, x.shape), -x / (y * y)),
    }[case]
    assert np.allclose(of_out.numpy(), ref_out, rtol=1e-5, atol=1e-5)
    assert np.allclose(test_global_storage.Get("x_diff"), dy * dfdx, rtol=1e-5, atol=1e-5)
    assert np.allclose(test_global_storage.Get("y_diff"), np.reshape((dy * dfdy).sum(), (1,)), rtol=1e-5, atol=1e-5)
def test_add():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["data_type"] = [flow.float]
    arg_dict["x_shape"] = [(10, 20, 30)]
    arg_dict["case"] = ["add"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_sub():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["data_type"] = [flow.float]
    arg_dict["x_shape"] = [(10, 20, 30)]
    arg_dict["case"] = ["sub"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_mul():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["data_type"] = [flow.float]
    arg_dict["x_shape"] = [(10, 20, 30)]
    arg_dict["case"] = ["mul"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_div():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["data_type"] = [flow.float]
    arg_dict["x_shape"] = [(10, 20, 30)]
    arg_dict["case"] = ["div"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)
