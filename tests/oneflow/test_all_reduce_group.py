"""OneFlow v0.3.4 oneflow/python/test/ops/test_all_reduce_group.py, ported mechanically (no TensorFlow in it): imports, unittest
classes as pytest functions, "gpu" devices as "cpu" ones (gpu_device_num -> cpu_device_num)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, TestCase


def do_test(test_case, mirrored):
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()

    if mirrored:
        func_config.default_logical_view(flow.scope.mirrored_view())
    else:
        func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(type="train", function_config=func_config)
    def Foo():
        w = flow.get_variable("w", (10,), initializer=flow.constant_initializer(1))
        lr_scheduler = flow.optimizer.PiecewiseConstantScheduler([], [5])
        flow.optimizer.SGD(lr_scheduler, momentum=0).minimize(w)
        return w

    check_point = flow.train.CheckPoint()
    check_point.init()
    r1 = Foo().get().numpy()
    test_case.assertTrue(np.all(r1 == 1.0))
    r2 = Foo().get().numpy()
    test_case.assertTrue(np.all(r2 == 0.5))
def test_variable_as_loss_on_two_device():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["mirrored"] = [True, False]
    for arg in GenArgList(arg_dict):
        do_test(test_case, *arg)
