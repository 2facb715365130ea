"""OneFlow v0.3.4 oneflow/python/test/ops/test_l2_normalize.py, ported: the program as written, "gpu" placements on
"cpu"; TensorFlow's l2_normalize and its tape gradient -> NumPy float64 (y = x / sqrt(max(sum x^2, eps)), dx = (dy -
y sum(dy y)) / norm; TF's gradient through its max is OneFlow's where sum >= eps); (4, 6, 8, 10) reduced to (4,
6, 8, 10)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, TestCase, test_global_storage, type_name_to_flow_type


class _Tensor:
    """What the test reads of a TensorFlow tensor: ``.numpy()``."""

    def __init__(self, a):
        self._a = a

    def numpy(self):
        return self._a


def compare_with_tensorflow(device_type, x_shape, data_type, axis, epsilon):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def L2NormalizeJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable(
                "x",
                shape=x_shape,
                dtype=type_name_to_flow_type[data_type],
                initializer=flow.random_uniform_initializer(minval=-10, maxval=10),
                trainable=True,
            )
            loss = flow.math.l2_normalize(x, axis=axis, epsilon=epsilon)
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
    of_out = L2NormalizeJob().get()
    # NumPy float64 (for TensorFlow's)
    x = test_global_storage.Get("x").astype(np.float64)
    loss_diff = test_global_storage.Get("loss_diff").astype(np.float64)
    sums = np.sum(x * x, axis=axis, keepdims=True)
    norm = np.sqrt(np.maximum(sums, epsilon))
    y = x / norm
    x_diff = np.where(sums >= epsilon, (loss_diff - y * np.sum(loss_diff * y, axis=axis, keepdims=True)) / norm,
                      loss_diff / norm)
    tf_out, tf_x_diff = _Tensor(y), _Tensor(x_diff)
    assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=1e-5, atol=1e-5)
    assert np.allclose(
        test_global_storage.Get("x_diff"), tf_x_diff.numpy(), rtol=1e-5, atol=1e-5
    )


def test_l2_normalize():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(4, 6, 8, 10)]
    arg_dict["data_type"] = ["float32"]
    arg_dict["axis"] = [-1, 0, 1, 2, 3]
    arg_dict["epsilon"] = [1e-10, 1e-5]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)


