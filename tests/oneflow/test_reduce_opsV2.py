"""OneFlow v0.3.4 oneflow/python/test/ops/test_reduce_opsV2.py, ported: programs mechanically, "gpu" as "cpu"
(gpu_device_num -> cpu_device_num); tf.math.reduce_sum -> NumPy float64 sums (gradient: the loss diff broadcast back;
axis=[] reduces nothing, as TensorFlow); the row reduction (25, 1024*1024) reduced to (4, 1024*1024)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, TestCase, test_global_storage


def compare_reduce_sum_with_tensorflow(
    device_type, input_shape, axis, keepdims, rtol=1e-5, atol=1e-5
):
    assert device_type in ["cpu"]
    flow.clear_default_session()

    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def ReduceSumJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable(
                "in",
                shape=input_shape,
                dtype=flow.float,
                initializer=flow.random_uniform_initializer(minval=2, maxval=5),
                trainable=True,
            )
            loss = flow.math.reduce_sum(x, axis=axis, keepdims=keepdims)
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
    of_out = ReduceSumJob().get()
    # TensorFlow
    x = test_global_storage.Get("x").astype(np.float64)
    axes = tuple(range(x.ndim)) if axis is None else tuple(axis)
    ref_out = x.sum(axis=axes, keepdims=keepdims)
    loss_diff = test_global_storage.Get("loss_diff").astype(np.float64)
    kept = [1 if i in axes else n for i, n in enumerate(x.shape)]
    ref_dx = np.broadcast_to(loss_diff.reshape(kept), x.shape)
    assert np.allclose(of_out.numpy(), ref_out, rtol=1e-5, atol=1e-5)
    assert np.allclose(test_global_storage.Get("x_diff"), ref_dx, rtol=1e-5, atol=1e-5)
def test_reduce_sum_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [], [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_sum_with_tensorflow(*arg)

def test_reduce_sum_col_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 64, 25)]
    arg_dict["axis"] = [[0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_sum_with_tensorflow(*arg)

def test_reduce_sum_row_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(4, 1024 * 1024)]
    arg_dict["axis"] = [[1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_sum_with_tensorflow(*arg)

def test_reduce_sum_scalar():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 64, 25)]
    arg_dict["axis"] = [[0, 1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_sum_with_tensorflow(*arg)

def test_reduce_sum_batch_axis_reduced():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def Foo(x: oft.Numpy.Placeholder((10,))):
        y = flow.math.reduce_sum(x)
        test_case.assertTrue(y.split_axis == flow.INVALID_SPLIT_AXIS)
        test_case.assertTrue(y.batch_axis == flow.INVALID_BATCH_AXIS)

    Foo(np.ndarray((10,), dtype=np.float32))
