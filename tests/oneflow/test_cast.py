"""OneFlow v0.3.4 oneflow/python/test/ops/test_cast.py, ported: CPU only, tf.cast -> ndarray.astype (the gradient of
a cast is the loss diff cast back)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, test_global_storage, type_name_to_flow_type, type_name_to_np_type


def cast_forward_compare_with_tensorflow(device_type, input_shape, dtype):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(function_config=func_config)
    def cast_forward(input_def: oft.Numpy.Placeholder(shape=input_shape, dtype=type_name_to_flow_type[dtype])):
        with flow.scope.placement(device_type, "0:0"):
            return flow.cast(input_def, dtype=type_name_to_flow_type[dtype])

    input = np.random.rand(*input_shape).astype(type_name_to_np_type[dtype])
    of_out = cast_forward(input).get()
    assert np.allclose(of_out.numpy(), input.astype(type_name_to_np_type[dtype]), rtol=1e-5, atol=1e-5)


def compare_with_tensorflow(device_type, input_shape, dtype):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def CastJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("in", shape=input_shape, dtype=type_name_to_flow_type[dtype],
                                  initializer=flow.random_uniform_initializer(), trainable=True)
            loss = flow.cast(x, dtype=flow.float)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(loss)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = CastJob().get()
    x = test_global_storage.Get("x")
    assert test_global_storage.Get("x_diff").dtype == type_name_to_np_type[dtype]
    assert np.allclose(of_out.numpy(), x.astype(np.float32), rtol=1e-5, atol=1e-5)
    assert np.allclose(test_global_storage.Get("x_diff"), test_global_storage.Get("loss_diff"), rtol=1e-5, atol=1e-5)


def test_cast():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(5, 4, 3)]
    arg_dict["dtype"] = ["float32", "double"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)


def test_cast_forward():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(5, 4, 3)]
    arg_dict["dtype"] = ["float32", "int8", "uint8", "double", "int32", "int64"]
    for arg in GenArgList(arg_dict):
        cast_forward_compare_with_tensorflow(*arg)
