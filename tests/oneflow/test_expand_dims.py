"""OneFlow v0.3.4 oneflow/python/test/ops/test_expand_dims.py, ported: CPU only, tf.expand_dims -> np.expand_dims."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList


def compare_with_tensorflow(device_type, x_shape, axis):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    seen = []

    def check_grad(x_diff_blob):
        assert np.array_equal(x_diff_blob.numpy(), np.ones(x_shape))
        seen.append(1)

    @flow.global_function(type="train", function_config=func_config)
    def ExpandDimsJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("var", shape=x_shape, dtype=flow.float, initializer=flow.ones_initializer(),
                                  trainable=True)
            flow.watch_diff(x, check_grad)
            loss = flow.expand_dims(x, axis)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(loss)
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = ExpandDimsJob().get().numpy()
    assert np.array_equal(of_out, np.expand_dims(np.ones(x_shape, dtype=np.float32), axis))
    assert seen == [1]


def gen_arg_list():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["in_shape"] = [(10, 10)]
    arg_dict["axis"] = [0, 1, 2, -1, -2, -3]
    return GenArgList(arg_dict)


def test_expand_dims():
    for arg in gen_arg_list():
        compare_with_tensorflow(*arg)
