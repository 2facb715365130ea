"""OneFlow v0.3.4 oneflow/python/test/ops/test_squeeze.py, ported: CPU only, tf.squeeze -> np.squeeze (a squeeze to
a scalar is compared as shape (1,), as OneFlow's test does)."""

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
    def SqueezeJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("var", shape=x_shape, dtype=flow.float, initializer=flow.ones_initializer(),
                                  trainable=True)
            flow.watch_diff(x, check_grad)
            loss = flow.squeeze(x, axis)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(loss)
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = SqueezeJob().get().numpy()
    ref = np.squeeze(np.ones(x_shape, dtype=np.float32), None if axis is None else tuple(axis))
    ref = ref.reshape(1) if ref.ndim == 0 else ref
    assert np.array_equal(of_out, ref)
    assert seen == [1]


def gen_arg_list():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["in_shape"] = [(1, 10, 1, 10, 1)]
    arg_dict["axis"] = [None, [2], [-3], [0, 2, 4], [-1, -3, -5]]
    return GenArgList(arg_dict)


def test_squeeze():
    for arg in gen_arg_list():
        compare_with_tensorflow(*arg)
    compare_with_tensorflow("cpu", (1, 1, 1), [0, 1, 2])
    compare_with_tensorflow("cpu", (5, 6, 7), None)
