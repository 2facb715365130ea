"""OneFlow v0.3.4 oneflow/python/test/ops/test_reduce_ops.py, ported: "gpu" -> "cpu" (gpu_device_num(2) ->
cpu_device_num(2)); TensorFlow's reductions and the reduce_min/max gradients -> NumPy float64 (``tf`` below).
Shapes reduced: (1024 * 64, 25) -> (1024 * 4, 25), (25, 1024 * 1024) -> (25, 1024 * 16)."""

from collections import OrderedDict
from types import SimpleNamespace

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, TestCase, test_global_storage


class _NpValue:
    def __init__(self, value):
        self.value = value

    def numpy(self):
        return self.value


def _axis(axis):
    return None if axis is None else tuple(axis)  # TensorFlow's [] reduces nothing, as NumPy's ()


def _np_reduce(fn, cast=None):
    def op(x, axis=None, keepdims=False):
        out = fn(np.asarray(x, np.float64) if cast is None else x, axis=_axis(axis), keepdims=keepdims)
        return _NpValue(out)

    return op


def _logsumexp(x, axis, keepdims):
    return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))


def _min_max_grad(fn, x, axis, keepdims, dy):
    """TensorFlow's reduce_min/max gradient: dy shared equally by the elements equal to the result."""
    x = np.asarray(x, np.float64)
    y = fn(x, axis=_axis(axis), keepdims=True)
    mask = (x == y).astype(np.float64)
    count = mask.sum(axis=_axis(axis), keepdims=True)
    return mask * np.reshape(dy, y.shape) / count


tf = SimpleNamespace(math=SimpleNamespace(
    reduce_any=_np_reduce(np.any, cast=bool), reduce_all=_np_reduce(np.all, cast=bool),
    reduce_prod=_np_reduce(np.prod), reduce_min=_np_reduce(np.min), reduce_max=_np_reduce(np.max),
    reduce_sum=_np_reduce(np.sum, cast=int), reduce_logsumexp=_np_reduce(_logsumexp),
    reduce_euclidean_norm=_np_reduce(lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))),
    reduce_std=_np_reduce(np.std), reduce_variance=_np_reduce(np.var),
))

def compare_reduce_any_with_tensorflow(
    device_type, input_shape, axis, keepdims, rtol=1e-5, atol=1e-5
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.int8)

    @flow.global_function(function_config=func_config)
    def ReduceAnyJob(x: oft.Numpy.Placeholder(input_shape, dtype=flow.int8)):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.reduce_any(x, axis=axis, keepdims=keepdims)

    x = np.random.rand(*input_shape).astype(np.int8)
    # OneFlow
    of_out = ReduceAnyJob(x).get()
    # TensorFlow
    tf_out = tf.math.reduce_any(x, axis=axis, keepdims=keepdims)
    assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=rtol, atol=atol)


def compare_reduce_prod_with_tensorflow(
    device_type, input_shape, axis, keepdims, rtol=1e-5, atol=1e-5
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float32)

    @flow.global_function(function_config=func_config)
    def ReduceProdJob(x: oft.Numpy.Placeholder(input_shape, dtype=flow.float32)):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.reduce_prod(x, axis=axis, keepdims=keepdims)

    x = np.random.rand(*input_shape).astype(np.float32)
    # OneFlow
    of_out = ReduceProdJob(x).get()
    # TensorFlow
    tf_out = tf.math.reduce_prod(x, axis=axis, keepdims=keepdims)
    assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=rtol, atol=atol)


def compare_reduce_min_with_tensorflow(
    device_type, input_shape, axis, keepdims, rtol=1e-5, atol=1e-5
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float32)

    @flow.global_function(type="train", function_config=func_config)
    def ReduceMinJob(x: oft.Numpy.Placeholder(input_shape, dtype=flow.float)):
        with flow.scope.placement(device_type, "0:0"):
            x += flow.get_variable(
                name="v1",
                shape=input_shape,
                dtype=flow.float,
                initializer=flow.zeros_initializer(),
            )
            loss = flow.math.reduce_min(x, axis=axis, keepdims=keepdims)
            loss = flow.identity(loss)
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(loss)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))

            return loss

    x = np.random.rand(*input_shape).astype(np.float32)
    # OneFlow
    of_out = ReduceMinJob(x).get()
    # TensorFlow
    tf_out = tf.math.reduce_min(x, axis=axis, keepdims=keepdims)
    loss_diff = test_global_storage.Get("loss_diff")
    tf_x_diff = _NpValue(_min_max_grad(np.min, x, axis, keepdims, loss_diff))
    assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=rtol, atol=atol)
    assert np.allclose(
        test_global_storage.Get("x_diff"), tf_x_diff.numpy(), rtol=1e-5, atol=1e-5
    )


def compare_reduce_all_with_tensorflow(
    device_type, input_shape, axis, keepdims, rtol=1e-5, atol=1e-5
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.int8)

    @flow.global_function(function_config=func_config)
    def ReduceAllJob(x: oft.Numpy.Placeholder(input_shape, dtype=flow.int8)):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.reduce_all(x, axis=axis, keepdims=keepdims)

    x = np.random.rand(*input_shape).astype(np.int8)
    # OneFlow
    of_out = ReduceAllJob(x).get()
    # TensorFlow
    tf_out = tf.math.reduce_all(x, axis=axis, keepdims=keepdims)
    assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=rtol, atol=atol)


def compare_reduce_sum_with_tensorflow(
    test_case, device_type, input_shape, axis, keepdims
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.int32)

    @flow.global_function(function_config=func_config)
    def ReduceSumJob(x: oft.Numpy.Placeholder(input_shape, dtype=flow.int32)):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.reduce_sum(x, axis=axis, keepdims=keepdims)

    x = (np.random.rand(*input_shape) * 100).astype(np.int32)
    # OneFlow
    of_out = ReduceSumJob(x).get()
    # TensorFlow
    tf_out = tf.math.reduce_sum(x, axis=axis, keepdims=keepdims)
    test_case.assertTrue(np.allclose(of_out.numpy(), tf_out.numpy()))


def compare_reduce_euclidean_norm_with_tensorflow(
    device_type, input_shape, axis, keepdims, rtol=1e-5, atol=1e-5
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float32)

    @flow.global_function(function_config=func_config)
    def ReduceEuclideanNormJob(x: oft.Numpy.Placeholder(input_shape, dtype=flow.float)):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.reduce_euclidean_norm(x, axis=axis, keepdims=keepdims)

    x = np.random.rand(*input_shape).astype(np.float32)
    # OneFlow
    of_out = ReduceEuclideanNormJob(x).get()
    # TensorFlow
    tf_out = tf.math.reduce_euclidean_norm(x, axis=axis, keepdims=keepdims)
    assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=rtol, atol=atol)


def compare_reduce_logsumexp_with_tensorflow(
    device_type, input_shape, axis, keepdims, rtol=1e-5, atol=1e-5
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float32)

    @flow.global_function(function_config=func_config)
    def ReduceLogSumExpJob(x: oft.Numpy.Placeholder(input_shape, dtype=flow.float)):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.reduce_logsumexp(x, axis=axis, keepdims=keepdims)

    x = np.random.rand(*input_shape).astype(np.float32)
    # OneFlow
    of_out = ReduceLogSumExpJob(x).get()
    # TensorFlow
    tf_out = tf.math.reduce_logsumexp(x, axis=axis, keepdims=keepdims)
    assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=rtol, atol=atol)


def compare_reduce_std_with_tensorflow(
    device_type, input_shape, axis, keepdims, rtol=1e-5, atol=1e-5
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float32)

    @flow.global_function(function_config=func_config)
    def ReduceStdJob(x: oft.Numpy.Placeholder(input_shape, dtype=flow.float)):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.reduce_std(x, axis=axis, keepdims=keepdims)

    x = np.random.rand(*input_shape).astype(np.float32)
    # OneFlow
    of_out = ReduceStdJob(x).get()
    # TensorFlow
    tf_out = tf.math.reduce_std(x, axis=axis, keepdims=keepdims)
    assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=rtol, atol=atol)


def compare_reduce_variance_with_tensorflow(
    device_type, input_shape, axis, keepdims, rtol=1e-5, atol=1e-5
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float32)

    @flow.global_function(function_config=func_config)
    def ReduceVarianceJob(x: oft.Numpy.Placeholder(input_shape, dtype=flow.float)):
        with flow.scope.placement(device_type, "0:0"):
            return flow.math.reduce_variance(x, axis=axis, keepdims=keepdims)

    x = np.random.rand(*input_shape).astype(np.float32)
    # OneFlow
    of_out = ReduceVarianceJob(x).get()
    # TensorFlow
    tf_out = tf.math.reduce_variance(x, axis=axis, keepdims=keepdims)
    assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=rtol, atol=atol)


def compare_reduce_max_with_tensorflow(
    device_type, input_shape, axis, keepdims, rtol=1e-5, atol=1e-5
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def ReduceMaxJob(x: oft.Numpy.Placeholder(input_shape, dtype=flow.float)):
        with flow.scope.placement(device_type, "0:0"):
            x += flow.get_variable(
                name="v1",
                shape=input_shape,
                dtype=flow.float,
                initializer=flow.zeros_initializer(),
            )
            loss = flow.math.reduce_max(x, axis=axis, keepdims=keepdims)
            loss = flow.identity(loss)
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(loss)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))

            return loss

    x = np.random.rand(*input_shape).astype(np.float32)
    # OneFlow
    of_out = ReduceMaxJob(x).get()
    # TensorFlow
    tf_out = tf.math.reduce_max(x, axis=axis, keepdims=keepdims)
    loss_diff = test_global_storage.Get("loss_diff")
    tf_x_diff = _NpValue(_min_max_grad(np.max, x, axis, keepdims, loss_diff))
    assert np.allclose(of_out.numpy(), tf_out.numpy(), rtol=rtol, atol=atol)
    assert np.allclose(
        test_global_storage.Get("x_diff"), tf_x_diff.numpy(), rtol=1e-5, atol=1e-5
    )


def test_reduce_any_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [], [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_any_with_tensorflow(*arg)

def test_reduce_any_with_one_value_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1,)]
    arg_dict["axis"] = [None, [], [0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_any_with_tensorflow(*arg)

def test_reduce_any_col_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_any_with_tensorflow(*arg)

def test_reduce_any_row_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(25, 1024 * 16)]
    arg_dict["axis"] = [[1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_any_with_tensorflow(*arg)

def test_reduce_any_scalar():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0, 1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_any_with_tensorflow(*arg)

def test_reduce_any_batch_axis_reduced():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def Foo(x: oft.Numpy.Placeholder((10,), dtype=flow.int8)):
        y = flow.math.reduce_any(x)
        test_case.assertTrue(y.split_axis == flow.INVALID_SPLIT_AXIS)
        test_case.assertTrue(y.batch_axis == flow.INVALID_BATCH_AXIS)

    Foo(np.ndarray((10,), dtype=np.int8))

def test_reduce_prod_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [], [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_prod_with_tensorflow(*arg)

def test_reduce_prod_with_one_value_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1,)]
    arg_dict["axis"] = [None, [], [0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_prod_with_tensorflow(*arg)

def test_reduce_prod_col_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_prod_with_tensorflow(*arg)

def test_reduce_prod_row_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(25, 1024 * 16)]
    arg_dict["axis"] = [[1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_prod_with_tensorflow(*arg)

def test_reduce_prod_scalar():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0, 1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_prod_with_tensorflow(*arg)

def test_reduce_prod_batch_axis_reduced():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def Foo(x: oft.Numpy.Placeholder((10,))):
        y = flow.math.reduce_prod(x)
        test_case.assertTrue(y.split_axis == flow.INVALID_SPLIT_AXIS)
        test_case.assertTrue(y.batch_axis == flow.INVALID_BATCH_AXIS)

    Foo(np.ndarray((10,), dtype=np.float32))

def test_reduce_min_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [], [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_min_with_tensorflow(*arg)

def test_reduce_min_with_one_value_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1,)]
    arg_dict["axis"] = [None, [], [0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_min_with_tensorflow(*arg)

def test_reduce_min_col_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_min_with_tensorflow(*arg)

def test_reduce_min_row_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(25, 1024 * 16)]
    arg_dict["axis"] = [[1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_min_with_tensorflow(*arg)

def test_reduce_min_scalar():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0, 1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_min_with_tensorflow(*arg)

def test_reduce_min_batch_axis_reduced():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def Foo(x: oft.Numpy.Placeholder((10,))):
        y = flow.math.reduce_min(x)
        test_case.assertTrue(y.split_axis == flow.INVALID_SPLIT_AXIS)
        test_case.assertTrue(y.batch_axis == flow.INVALID_BATCH_AXIS)

    Foo(np.ndarray((10,), dtype=np.float32))

def test_reduce_all_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [], [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_all_with_tensorflow(*arg)

def test_reduce_all_with_one_value_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1,)]
    arg_dict["axis"] = [None, [], [0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_all_with_tensorflow(*arg)

def test_reduce_all_col_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_all_with_tensorflow(*arg)

def test_reduce_all_row_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(25, 1024 * 16)]
    arg_dict["axis"] = [[1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_all_with_tensorflow(*arg)

def test_reduce_all_scalar():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0, 1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_all_with_tensorflow(*arg)

def test_reduce_all_batch_axis_reduced():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def Foo(x: oft.Numpy.Placeholder((10,), dtype=flow.int8)):
        y = flow.math.reduce_all(x)
        test_case.assertTrue(y.split_axis == flow.INVALID_SPLIT_AXIS)
        test_case.assertTrue(y.batch_axis == flow.INVALID_BATCH_AXIS)

    Foo(np.ndarray((10,), dtype=np.int8))

def test_reduce_sum_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [], [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_sum_with_tensorflow(test_case, *arg)

def test_reduce_sum_with_one_value_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1,)]
    arg_dict["axis"] = [None, [], [0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_sum_with_tensorflow(test_case, *arg)

def test_reduce_sum_col_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_sum_with_tensorflow(test_case, *arg)

def test_reduce_sum_row_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(25, 1024 * 16)]
    arg_dict["axis"] = [[1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_sum_with_tensorflow(test_case, *arg)

def test_reduce_sum_scalar():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0, 1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_sum_with_tensorflow(test_case, *arg)

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

def test_reduce_euclidean_norm_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [], [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_euclidean_norm_with_tensorflow(*arg)

def test_reduce_euclidean_norm_with_one_value_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1,)]
    arg_dict["axis"] = [None, [], [0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_euclidean_norm_with_tensorflow(*arg)

def test_reduce_euclidean_norm_col_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_euclidean_norm_with_tensorflow(*arg)

def test_reduce_euclidean_norm_row_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(25, 1024 * 16)]
    arg_dict["axis"] = [[1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_euclidean_norm_with_tensorflow(*arg)

def test_reduce_euclidean_norm_scalar():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0, 1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_euclidean_norm_with_tensorflow(*arg)

def test_reduce_euclidean_norm_batch_axis_reduced():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def Foo(x: oft.Numpy.Placeholder((10,))):
        y = flow.math.reduce_euclidean_norm(x)
        test_case.assertTrue(y.split_axis == flow.INVALID_SPLIT_AXIS)
        test_case.assertTrue(y.batch_axis == flow.INVALID_BATCH_AXIS)

    Foo(np.ndarray((10,), dtype=np.float32))

def test_reduce_logsumexp_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [], [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_logsumexp_with_tensorflow(*arg)

def test_reduce_logsumexp_with_one_value_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1,)]
    arg_dict["axis"] = [None, [], [0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_logsumexp_with_tensorflow(*arg)

def test_reduce_logsumexp_col_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_logsumexp_with_tensorflow(*arg)

def test_reduce_logsumexp_row_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(25, 1024 * 16)]
    arg_dict["axis"] = [[1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_logsumexp_with_tensorflow(*arg)

def test_reduce_logsumexp_scalar():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0, 1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_logsumexp_with_tensorflow(*arg)

def test_reduce_logsumexp_batch_axis_reduced():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def Foo(x: oft.Numpy.Placeholder((10,))):
        y = flow.math.reduce_logsumexp(x)
        test_case.assertTrue(y.split_axis == flow.INVALID_SPLIT_AXIS)
        test_case.assertTrue(y.batch_axis == flow.INVALID_BATCH_AXIS)

    Foo(np.ndarray((10,), dtype=np.float32))

def test_reduce_std_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [], [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_std_with_tensorflow(*arg)

def test_reduce_std_with_one_value_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1,)]
    arg_dict["axis"] = [None, [], [0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_std_with_tensorflow(*arg)

def test_reduce_std_col_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_std_with_tensorflow(*arg)

def test_reduce_std_row_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(25, 1024 * 16)]
    arg_dict["axis"] = [[1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_std_with_tensorflow(*arg)

def test_reduce_std_scalar():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0, 1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_std_with_tensorflow(*arg)

def test_reduce_std_batch_axis_reduced():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def Foo(x: oft.Numpy.Placeholder((10,))):
        y = flow.math.reduce_std(x)
        test_case.assertTrue(y.split_axis == flow.INVALID_SPLIT_AXIS)
        test_case.assertTrue(y.batch_axis == flow.INVALID_BATCH_AXIS)

    Foo(np.ndarray((10,), dtype=np.float32))

def test_reduce_variance_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [], [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_variance_with_tensorflow(*arg)

def test_reduce_variance_with_one_value_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1,)]
    arg_dict["axis"] = [None, [], [0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_variance_with_tensorflow(*arg)

def test_reduce_variance_col_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_variance_with_tensorflow(*arg)

def test_reduce_variance_row_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(25, 1024 * 16)]
    arg_dict["axis"] = [[1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_variance_with_tensorflow(*arg)

def test_reduce_variance_scalar():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0, 1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_variance_with_tensorflow(*arg)

def test_reduce_variance_batch_axis_reduced():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def Foo(x: oft.Numpy.Placeholder((10,))):
        y = flow.math.reduce_variance(x)
        test_case.assertTrue(y.split_axis == flow.INVALID_SPLIT_AXIS)
        test_case.assertTrue(y.batch_axis == flow.INVALID_BATCH_AXIS)

    Foo(np.ndarray((10,), dtype=np.float32))

def test_reduce_max_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(64, 64, 64)]
    arg_dict["axis"] = [None, [], [1], [0, 2]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_max_with_tensorflow(*arg)

def test_reduce_max_with_one_value_func():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1,)]
    arg_dict["axis"] = [None, [], [0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_max_with_tensorflow(*arg)

def test_reduce_max_col_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_max_with_tensorflow(*arg)

def test_reduce_max_row_reduce():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(25, 1024 * 16)]
    arg_dict["axis"] = [[1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_max_with_tensorflow(*arg)

def test_reduce_max_scalar():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [(1024 * 4, 25)]
    arg_dict["axis"] = [[0, 1]]
    arg_dict["keepdims"] = [True, False]
    for arg in GenArgList(arg_dict):
        compare_reduce_max_with_tensorflow(*arg)

def test_reduce_max_batch_axis_reduced():
    test_case = TestCase()
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())

    @flow.global_function(function_config=func_config)
    def Foo(x: oft.Numpy.Placeholder((10,))):
        y = flow.math.reduce_max(x)
        test_case.assertTrue(y.split_axis == flow.INVALID_SPLIT_AXIS)
        test_case.assertTrue(y.batch_axis == flow.INVALID_BATCH_AXIS)

    Foo(np.ndarray((10,), dtype=np.float32))

