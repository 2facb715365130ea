"""OneFlow v0.3.4 oneflow/python/test/ops/test_bias_add.py, ported: CPU only (OneFlow skips float16 on the CPU too),
TensorFlow -> NumPy float64 (y = value + bias on the channel axis; d value = 1, d bias = sum over the other axes)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgDict, test_global_storage


def RunOneflowBiasAdd(data_type, device_type, value, bias, flow_args):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def FlowJob(value: oft.Numpy.Placeholder(value.shape), bias: oft.Numpy.Placeholder(bias.shape)):
        with flow.scope.placement(device_type, "0:0"):
            value += flow.get_variable(name="v1", shape=(1,), dtype=flow.float, initializer=flow.zeros_initializer())
            bias += flow.get_variable(name="v2", shape=(1,), dtype=flow.float, initializer=flow.zeros_initializer())
            loss = flow.nn.bias_add(value, bias, *flow_args)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0]), momentum=0).minimize(loss)
            flow.watch_diff(value, test_global_storage.Setter("value_diff"))
            flow.watch_diff(bias, test_global_storage.Setter("bias_diff"))
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    y = FlowJob(value, bias).get().numpy()
    return y, test_global_storage.Get("value_diff"), test_global_storage.Get("bias_diff")


def RunNumpyBiasAdd(value, bias, data_format):
    axis = 1 if data_format == "NCHW" else value.ndim - 1
    shape = [1] * value.ndim
    shape[axis] = -1
    y = value.astype(np.float64) + bias.astype(np.float64).reshape(shape)
    other = tuple(i for i in range(value.ndim) if i != axis)
    return y, np.ones_like(y), np.ones_like(y).sum(axis=other)


def CompareBiasAddWithTensorFlow(data_type, device_type, input_shapes, op_args, input_minval=-10, input_maxval=10,
                                 y_rtol=1e-5, y_atol=1e-5, x_diff_rtol=1e-5, x_diff_atol=1e-5):
    x = [np.random.uniform(low=input_minval, high=input_maxval, size=s).astype(np.float32) for s in input_shapes]
    of_y, of_x_diff1, of_x_diff2 = RunOneflowBiasAdd(data_type, device_type, *x, op_args)
    ref_y, ref_x_diff1, ref_x_diff2 = RunNumpyBiasAdd(*x, *op_args)
    assert np.allclose(of_y, ref_y, rtol=y_rtol, atol=y_atol)
    assert np.allclose(of_x_diff1, ref_x_diff1, rtol=x_diff_rtol, atol=x_diff_atol)
    assert np.allclose(of_x_diff2, ref_x_diff2, rtol=x_diff_rtol, atol=x_diff_atol)


def test_bias_add_nchw():
    arg_dict = OrderedDict()
    arg_dict["data_type"] = ["float32"]
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shapes"] = [((1, 20, 1, 11), (20,)), ((2, 20, 1, 11), (20,))]
    arg_dict["op_args"] = [["NCHW"]]
    for arg in GenArgDict(arg_dict):
        CompareBiasAddWithTensorFlow(**arg)


def test_bias_add_nhwc():
    arg_dict = OrderedDict()
    arg_dict["data_type"] = ["float32"]
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shapes"] = [((30, 20, 5, 10), (10,)), ((2, 5, 7, 7), (7,))]
    arg_dict["op_args"] = [["NHWC"]]
    for arg in GenArgDict(arg_dict):
        CompareBiasAddWithTensorFlow(**arg)
