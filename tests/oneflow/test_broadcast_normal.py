"""OneFlow v0.3.4 oneflow/python/test/ops/test_broadcast_normal.py, ported: "gpu" -> "cpu"; TensorFlow's
tf.math ops and their GradientTape gradients -> NumPy float64 (``tf`` below: each op's value and, for the trained
ones, its gradients written out and summed back over the broadcast axes, as TensorFlow's are)."""

from collections import OrderedDict
from types import SimpleNamespace

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, test_global_storage, type_name_to_flow_type, type_name_to_np_type


def _sum_to(a, shape):
    while a.ndim > len(shape):
        a = a.sum(0)
    return a.sum(axis=tuple(i for i, d in enumerate(shape) if d == 1), keepdims=True)


class _NpResult:
    def __init__(self, out, dx, dy):
        self.out, self.dx, self.dy = out, dx, dy

    def numpy(self):
        return self.out


def _np_op(fn, dfdx, dfdy):
    def op(x, y):
        dtype = x.dtype
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        out = fn(x64, y64) if dtype.kind == "f" else fn(x, y)
        shape = np.broadcast(x, y).shape
        dx = _sum_to(np.broadcast_to(dfdx(x64, y64), shape), x.shape)
        dy = _sum_to(np.broadcast_to(dfdy(x64, y64), shape), y.shape)
        return _NpResult(out, dx, dy)

    return op


tf = SimpleNamespace(math=SimpleNamespace(
    add=_np_op(np.add, lambda x, y: np.ones_like(x), lambda x, y: np.ones_like(y)),
    subtract=_np_op(np.subtract, lambda x, y: np.ones_like(x), lambda x, y: -np.ones_like(y)),
    multiply=_np_op(np.multiply, lambda x, y: y, lambda x, y: x),
    divide=_np_op(np.divide, lambda x, y: 1 / y, lambda x, y: -x / (y * y)),
    floormod=_np_op(np.mod, lambda x, y: np.zeros_like(x), lambda x, y: np.zeros_like(y)),
    maximum=_np_op(np.maximum, lambda x, y: np.zeros_like(x), lambda x, y: np.zeros_like(y)),
    minimum=_np_op(np.minimum, lambda x, y: np.zeros_like(x), lambda x, y: np.zeros_like(y)),
))


def RunOneflowOp(device_type, flow_op, x, y, data_type):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    flow_type = type_name_to_flow_type[data_type]

    @flow.global_function(type="train", function_config=func_config)
    def FlowJob(
        x: oft.Numpy.Placeholder(x.shape, dtype=flow_type),
        y: oft.Numpy.Placeholder(y.shape, dtype=flow_type),
    ):
        with flow.scope.placement(device_type, "0:0"):
            x += flow.get_variable(
                name="x",
                shape=x.shape,
                dtype=flow_type,
                initializer=flow.zeros_initializer(),
                trainable=True,
            )
            y += flow.get_variable(
                name="y",
                shape=y.shape,
                dtype=flow_type,
                initializer=flow.zeros_initializer(),
                trainable=True,
            )
            loss = flow_op(x, y)
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0
            ).minimize(loss)
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch_diff(y, test_global_storage.Setter("y_diff"))

            return loss

    # Oneflow
    check_point = flow.train.CheckPoint()
    check_point.init()
    out = FlowJob(x, y).get().numpy()
    x_diff = test_global_storage.Get("x_diff")
    y_diff = test_global_storage.Get("y_diff")
    return out, x_diff, y_diff


def RunTensorFlowOp(tf_op, x, y):
    # TensorFlow -> NumPy
    out = tf_op(x, y)
    return out.numpy(), out.dx, out.dy


def compare_with_tensorflow_grad(
    device_type,
    flow_op,
    tf_op,
    x_shape,
    y_shape,
    data_type,
    input_minval=-10,
    input_maxval=10,
    out_rtol=1e-5,
    out_atol=1e-5,
    diff_rtol=1e-5,
    diff_atol=1e-5,
):
    assert device_type in ["gpu", "cpu"]

    np_type = type_name_to_np_type[data_type]
    x = np.random.uniform(low=input_minval, high=input_maxval, size=x_shape).astype(
        np_type
    )
    y = np.random.uniform(low=input_minval, high=input_maxval, size=y_shape).astype(
        np_type
    )
    if flow_op in (flow.math.divide, flow.math.mod):
        y[np.where(y == 0)] += 1

    of_out, of_x_diff, of_y_diff, = RunOneflowOp(device_type, flow_op, x, y, data_type)
    tf_out, tf_x_diff, tf_y_diff = RunTensorFlowOp(tf_op, x, y)

    assert np.allclose(of_out, tf_out, rtol=out_rtol, atol=out_atol, equal_nan=True)
    assert np.allclose(
        of_x_diff, tf_x_diff, rtol=diff_rtol, atol=diff_atol, equal_nan=True
    )
    assert np.allclose(
        of_y_diff, tf_y_diff, rtol=diff_rtol, atol=diff_atol, equal_nan=True
    )
    flow.clear_default_session()


def compare_with_tensorflow(
    device_type,
    flow_op,
    tf_op,
    x_shape,
    y_shape,
    data_type,
    input_minval=-10,
    input_maxval=10,
    out_rtol=1e-5,
    out_atol=1e-5,
):
    assert device_type in ["gpu", "cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    flow_type = type_name_to_flow_type[data_type]

    @flow.global_function(function_config=func_config)
    def FlowJob(
        x: oft.Numpy.Placeholder(x_shape, dtype=flow_type),
        y: oft.Numpy.Placeholder(y_shape, dtype=flow_type),
    ):
        with flow.scope.placement(device_type, "0:0"):
            return flow_op(x, y)

    np_type = type_name_to_np_type[data_type]
    if np_type in (np.int8, np.int32, np.int64):
        x = np.random.randint(low=input_minval, high=input_maxval, size=x_shape).astype(
            np_type
        )
        y = np.random.randint(low=input_minval, high=input_maxval, size=y_shape).astype(
            np_type
        )
    else:
        x = np.random.uniform(low=input_minval, high=input_maxval, size=x_shape).astype(
            np_type
        )
        y = np.random.uniform(low=input_minval, high=input_maxval, size=y_shape).astype(
            np_type
        )
    if flow_op in (flow.math.divide, flow.math.mod):
        y[np.where(y == 0)] += 1

    # Oneflow
    of_out = FlowJob(x, y).get().numpy()
    # Tensorflow
    tf_out = tf_op(x, y).numpy()
    assert np.allclose(of_out, tf_out, rtol=out_rtol, atol=out_atol, equal_nan=True)
    flow.clear_default_session()


def test_broadcast_add():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["flow_op"] = [flow.math.add]
    arg_dict["tf_op"] = [tf.math.add]
    arg_dict["x_shape"] = [(3, 1, 4, 1)]
    arg_dict["y_shape"] = [(4, 1, 6)]
    arg_dict["data_type"] = ["float32", "double"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow_grad(*arg)

def test_broadcast_sub():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["flow_op"] = [flow.math.subtract]
    arg_dict["tf_op"] = [tf.math.subtract]
    arg_dict["x_shape"] = [(3, 1, 4, 1)]
    arg_dict["y_shape"] = [(4, 1, 6)]
    arg_dict["data_type"] = ["float32", "double"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_broadcast_mul():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["gpu", "cpu"]
    arg_dict["flow_op"] = [flow.math.multiply]
    arg_dict["tf_op"] = [tf.math.multiply]
    arg_dict["x_shape"] = [(3, 1, 4, 5, 1)]
    arg_dict["y_shape"] = [(1, 4, 1, 1, 5)]
    arg_dict["data_type"] = ["float32", "double"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow_grad(*arg)

def test_broadcast_div():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["flow_op"] = [flow.math.divide]
    arg_dict["tf_op"] = [tf.math.divide]
    arg_dict["x_shape"] = [(3, 1, 4, 5, 1)]
    arg_dict["y_shape"] = [(3, 4, 1, 1, 5)]
    arg_dict["data_type"] = ["float32", "double"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow_grad(*arg)

def test_broadcast_floormod():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["gpu"]
    arg_dict["flow_op"] = [flow.math.mod]
    arg_dict["tf_op"] = [tf.math.floormod]
    arg_dict["x_shape"] = [(3, 1, 4, 5, 1)]
    arg_dict["y_shape"] = [(1, 4, 1, 1, 5)]
    arg_dict["data_type"] = ["float32", "double", "int32", "int64"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_broadcast_maximum():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["flow_op"] = [flow.math.maximum]
    arg_dict["tf_op"] = [tf.math.maximum]
    arg_dict["x_shape"] = [(3, 1, 4, 5, 1)]
    arg_dict["y_shape"] = [(1, 4, 1, 1, 5)]
    arg_dict["data_type"] = ["float32", "double", "int32", "int64"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

def test_broadcast_minimum():
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["flow_op"] = [flow.math.minimum]
    arg_dict["tf_op"] = [tf.math.minimum]
    arg_dict["x_shape"] = [(3, 1, 4, 5, 1)]
    arg_dict["y_shape"] = [(1, 4, 1, 1, 5)]
    arg_dict["data_type"] = ["float32", "double", "int32", "int64"]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)

