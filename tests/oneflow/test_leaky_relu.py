"""OneFlow v0.3.4 oneflow/python/test/ops/test_leaky_relu.py, ported: CPU only, tf.nn.leaky_relu -> NumPy
(TensorFlow's definition: x if x > 0 else alpha * x, for every alpha OneFlow's test uses, 2 and -0.2 included;
gradient 1 or alpha); (10, 10, 20, 30) reduced to (4, 10, 20, 30)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, test_global_storage, type_name_to_flow_type


def compare_with_tensorflow(device_type, x_shape, data_type, alpha):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def LeakyReluJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("x", shape=x_shape, dtype=type_name_to_flow_type[data_type],
                                  initializer=flow.random_uniform_initializer(minval=-10, maxval=10), trainable=True)
            loss = flow.nn.leaky_relu(x, alpha=alpha)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(loss)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = LeakyReluJob().get()
    x = test_global_storage.Get("x").astype(np.float64)
    ref = np.where(x > 0, x, alpha * x)
    ref_dx = test_global_storage.Get("loss_diff") * np.where(x > 0, 1.0, alpha)
    assert np.allclose(of_out.numpy(), ref, rtol=1e-5, atol=1e-5)
    assert np.allclose(test_global_storage.Get("x_diff"), ref_dx, rtol=1e-5, atol=1e-5)


def test_leaky_relu():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(4, 10, 20, 30), (10, 20, 30), (10, 20), (20,)]
    arg_dict["data_type"] = ["float32", "double"]
    arg_dict["alpha"] = [0.1, 0.2, -0.2, 2]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)
