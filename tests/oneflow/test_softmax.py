"""OneFlow v0.3.4 oneflow/python/test/ops/test_softmax.py, ported: CPU only, TensorFlow -> NumPy float64 (softmax's
gradient dy*y - y*sum(dy*y)), shapes reduced (OneFlow's up to (100, 65536)); float16 skipped on the CPU as OneFlow's."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, softmax64, test_global_storage, type_name_to_flow_type


def compare_with_tensorflow(device_type, x_shape, data_type, axis):
    assert device_type in ["gpu", "cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    dtype = type_name_to_flow_type[data_type]

    @flow.global_function(type="train", function_config=func_config)
    def SoftmaxJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("x", shape=x_shape, dtype=dtype,
                                  initializer=flow.random_uniform_initializer(minval=-1.0, maxval=1.0),
                                  trainable=True)
            x1 = x
            x = flow.identity(x)
            loss = flow.nn.softmax(x, axis=axis)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))
            total_loss = loss * x1
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(total_loss)
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = SoftmaxJob().get()
    x = test_global_storage.Get("x").astype(np.float64)
    y = softmax64(x, axis)
    dy = test_global_storage.Get("loss_diff").astype(np.float64)
    ref_dx = y * (dy - (dy * y).sum(axis=axis, keepdims=True))
    tolerance = 1e-5
    assert np.allclose(of_out.numpy(), y, rtol=tolerance, atol=tolerance)
    assert np.allclose(test_global_storage.Get("x_diff"), ref_dx, rtol=tolerance, atol=tolerance)


def test_softmax_shape():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(10, 10, 20, 30), (10, 20, 13), (10, 20), (12, 2001), (10, 4096), (3, 65535)]
    arg_dict["data_type"] = ["float32", "double"]
    arg_dict["axis"] = [-1]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)


def test_softmax_axis():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(10, 20, 30, 40)]
    arg_dict["data_type"] = ["float32", "double"]
    arg_dict["axis"] = [-4, -3, -2, -1, 0, 1, 2, 3]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)
