"""OneFlow v0.3.4 oneflow/python/test/ops/test_reshapeV2.py, ported: programs mechanically, "gpu" as "cpu";
tf.reshape -> np.reshape (the gradient is the loss diff reshaped back)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, TestCase, test_global_storage


def compare_with_tensorflow(device_type, input_shape, shape):
    assert device_type in ["cpu"]
    flow.clear_default_session()

    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def ReshapeJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable(
                "in",
                shape=input_shape,
                dtype=flow.float,
                initializer=flow.random_uniform_initializer(minval=2, maxval=5),
                trainable=True,
            )

            loss = flow.reshape(x, shape)
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(loss)

            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))

            return loss

    # OneFlow
    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = ReshapeJob().get()
    # TensorFlow
    x = test_global_storage.Get("x")
    loss_diff = test_global_storage.Get("loss_diff")
    assert np.allclose(of_out.numpy(), np.reshape(x, shape), rtol=1e-5, atol=1e-5)
    assert np.allclose(test_global_storage.Get("x_diff"), np.reshape(loss_diff, x.shape), rtol=1e-5, atol=1e-5)
def test_reshape():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(5, 4, 3), (2, 3, 4, 5)]
    arg_dict["shape"] = [[2, -1], [-1], [3, -1]]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)
