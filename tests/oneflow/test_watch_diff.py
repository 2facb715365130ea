"""OneFlow v0.3.4 oneflow/python/test/ops/test_watch_diff.py, ported: CPU only (the handler is unannotated: it gets
a blob with .numpy(), as OneFlow's). The handler must have run: counted here, which OneFlow's test does not check."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, type_name_to_flow_type


def WatchDiff(device_type, input_shape, dtype):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    seen = []

    def CheckOnes(diff):
        ones = np.ones(input_shape)
        assert np.allclose(diff.numpy(), ones, rtol=1e-5, atol=1e-5)
        seen.append(1)

    @flow.global_function(type="train", function_config=func_config)
    def TrainJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("in", shape=input_shape, dtype=type_name_to_flow_type[dtype],
                                  initializer=flow.random_uniform_initializer(), trainable=True)
            flow.watch_diff(x, CheckOnes)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(x)

    check_point = flow.train.CheckPoint()
    check_point.init()
    TrainJob()
    flow.sync_default_session()
    assert seen == [1]


def test_watch_diff():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(10,)]
    arg_dict["dtype"] = ["float32"]
    for arg in GenArgList(arg_dict):
        WatchDiff(*arg)
