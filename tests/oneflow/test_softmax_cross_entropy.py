"""OneFlow v0.3.4 oneflow/python/test/ops/test_softmax_cross_entropy.py, ported: CPU only (OneFlow skips float16 on
the CPU), tf.nn.softmax_cross_entropy_with_logits -> NumPy float64 (loss = -sum(labels * log_softmax(x)), dx =
dloss * (softmax(x) - labels)); OneFlow's shapes."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, softmax64, test_global_storage, type_name_to_flow_type, type_name_to_np_type


def compare_with_tensorflow(device_type, data_type, shape):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    dtype = type_name_to_flow_type[data_type]

    def np_softmax(x):
        return np.exp(x) / np.sum(np.exp(x), axis=1, keepdims=True)

    @flow.global_function(type="train", function_config=func_config)
    def SoftmaxCrossEntropyWithLogitsJob(labels: oft.Numpy.Placeholder(shape, dtype)):
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("x", shape=shape, dtype=type_name_to_flow_type[data_type],
                                  initializer=flow.random_uniform_initializer(minval=-10, maxval=10), trainable=True)
            loss = flow.nn.softmax_cross_entropy_with_logits(labels=labels, logits=x)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(loss)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))
            return loss

    # fake labels (OneFlow's: a softmax over axis 1, which for a 3-D shape does not sum to 1 over the classes)
    labels = np_softmax(np.random.randint(0, 10, size=shape)).astype(type_name_to_np_type[data_type])
    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = SoftmaxCrossEntropyWithLogitsJob(labels).get()
    x = test_global_storage.Get("x").astype(np.float64)
    lab = labels.astype(np.float64)
    p = softmax64(x, -1)
    log_p = x - x.max(-1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(-1, keepdims=True))
    ref_out = -(lab * log_p).sum(-1)
    ref_dx = test_global_storage.Get("loss_diff")[..., None] * (p - lab)
    tolerance = 1e-5
    assert np.allclose(of_out.numpy(), ref_out, rtol=tolerance, atol=tolerance)
    assert np.allclose(test_global_storage.Get("x_diff"), ref_dx, rtol=tolerance, atol=tolerance)


def test_softmax_cross_entropy_with_logits():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["data_type"] = ["double", "float32"]
    arg_dict["shape"] = [(64, 1000), (5, 5, 1000)]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)
