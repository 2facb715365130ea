"""OneFlow v0.3.4 oneflow/python/test/ops/test_moments.py, ported: CPU only, tf.nn.moments -> NumPy float64 (mean and
population variance over the axes; d(m + v)/dx = dy (1/n + 2 (x - m)/n)); (10, 10, 20, 30) reduced to (4, 10, 20, 30)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, test_global_storage, type_name_to_flow_type


def compare_with_tensorflow(device_type, x_shape, data_type, axes):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    if max(axes) >= len(x_shape):
        return

    @flow.global_function(type="train", function_config=func_config)
    def MomentsJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("x", shape=x_shape, dtype=type_name_to_flow_type[data_type],
                                  initializer=flow.random_uniform_initializer(minval=-10, maxval=10), trainable=True)
            (m, v) = flow.nn.moments(x, axes)
            loss = m + v
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(loss)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))
            return (m, v)

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = MomentsJob().get()
    x = test_global_storage.Get("x").astype(np.float64)
    ax = tuple(axes)
    n = np.prod([x.shape[a] for a in ax])
    m = x.mean(axis=ax, keepdims=True)
    v = ((x - m) ** 2).mean(axis=ax, keepdims=True)
    dy = test_global_storage.Get("loss_diff").astype(np.float64).reshape(m.shape)
    ref_dx = dy * (1.0 / n + 2 * (x - m) / n)
    for got, ref in zip(of_out, (m, v)):
        assert np.allclose(got.numpy().reshape(ref.shape), ref, rtol=1e-5, atol=1e-5)
    assert np.allclose(test_global_storage.Get("x_diff"), ref_dx, rtol=1e-5, atol=1e-5)


def test_moments():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(4, 10, 20, 30), (10, 20, 30), (10, 20), (20,)]
    arg_dict["data_type"] = ["float32", "double"]
    arg_dict["axes"] = [[0], [0, 2], [0, 1]]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)
