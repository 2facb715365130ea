"""OneFlow v0.3.4 oneflow/python/test/ops/test_reshapeV3.py, ported mechanically (no TensorFlow in it): imports, unittest
classes as pytest functions, "gpu" devices as "cpu" ones (gpu_device_num -> cpu_device_num)."""

from collections import OrderedDict

import flowlab as flow

from .of_util import GenArgList, TestCase


def distribute_reshape_test(device_type, device_num, input_shape, shape):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    flow.config.cpu_device_num(device_num)
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def ReshapeJob():
        with flow.scope.placement(device_type, f"0:0-{device_num - 1}"):
            x = flow.get_variable(
                "var_x",
                shape=input_shape,
                dtype=flow.float,
                initializer=flow.random_uniform_initializer(minval=2, maxval=5),
                trainable=True,
                distribute=flow.distribute.split(2),
            )

            loss = flow.reshape(x, shape)
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(loss)

            return x, loss

    # OneFlow
    check_point = flow.train.CheckPoint()
    check_point.init()
    x, loss = ReshapeJob().get()
def test_reshape():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["device_num"] = [2]
    arg_dict["input_shape"] = [(5, 8, 16)]
    arg_dict["shape"] = [[-1, 16]]
    for arg in GenArgList(arg_dict):
        distribute_reshape_test(*arg)
