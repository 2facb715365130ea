"""OneFlow v0.3.4 oneflow/python/test/ops/test_reduce_mean.py, ported: CPU for "gpu", TensorFlow -> NumPy float64
(mean; gradient dy / n broadcast back)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, test_global_storage


def compare_with_tensorflow(device_type, input_shape, axis, keepdims):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def ReduceMeanJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("x", shape=input_shape, dtype=flow.float,
                                  initializer=flow.random_uniform_initializer(minval=-10, maxval=10), trainable=True)
            loss = flow.math.reduce_mean(x, axis=axis, keepdims=keepdims)
            loss = flow.identity(loss)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(loss)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = ReduceMeanJob().get()
    x = test_global_storage.Get("x").astype(np.float64)
    axes = tuple(range(x.ndim)) if axis is None else tuple(axis)
    n = np.prod([x.shape[a] for a in axes])
    dy = test_global_storage.Get("loss_diff").astype(np.float64)
    ref_dx = np.broadcast_to(np.reshape(dy, [1 if i in axes else s for i, s in enumerate(x.shape)]), x.shape) / n
    assert np.allclose(of_out.numpy(), x.mean(axis=axes, keepdims=keepdims), rtol=1e-5, atol=1e-5)
    assert np.allclose(test_global_storage.Get("x_diff"), ref_dx, rtol=1e-5, atol=1e-5)


def test_reduce_mean():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)
