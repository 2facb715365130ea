"""OneFlow v0.3.4 oneflow/python/test/ops/test_gather.py, ported: CPU only, tf.gather -> np.take (the gradient
scatters dy back with np.add.at), test_gather_case_3's (30, 150, 50, 2) params reduced to (6, 15, 5, 2)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList


def _random_inputs(params_shape, indices_shape, axis):
    params = np.random.rand(*params_shape).astype(np.float32)
    indices = np.random.randint(low=0, high=params_shape[axis], size=indices_shape, dtype=np.int32)
    return params, indices


def _make_gather_fn(params, indices, axis, batch_dims, device_type, mirrored, compare_fn):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    if mirrored:
        func_config.default_logical_view(flow.scope.mirrored_view())
    else:
        func_config.default_logical_view(flow.scope.consistent_view())

    def do_gather(x_blob, i_blob):
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("params", shape=params.shape, dtype=flow.float32,
                                  initializer=flow.constant_initializer(0))
            x = flow.cast_to_current_logical_view(x)
            x = x + x_blob
            y = flow.gather(x, i_blob, axis=axis, batch_dims=batch_dims)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-3]), momentum=0).minimize(y)
        flow.watch_diff(x, compare_fn)
        return y

    if mirrored:
        @flow.global_function(type="train", function_config=func_config)
        def gather_fn(params_def: oft.ListNumpy.Placeholder(params.shape, dtype=flow.float),
                      indices_def: oft.ListNumpy.Placeholder(indices.shape, dtype=flow.int32)):
            return do_gather(params_def, indices_def)
    else:
        @flow.global_function(type="train", function_config=func_config)
        def gather_fn(params_def: oft.Numpy.Placeholder(params.shape, dtype=flow.float),
                      indices_def: oft.Numpy.Placeholder(indices.shape, dtype=flow.int32)):
            return do_gather(params_def, indices_def)
    return gather_fn


def _compare_gather_with_tf(device_type, params_shape, indices_shape, axis, batch_dims, mirrored=False):
    params, indices = _random_inputs(params_shape, indices_shape, axis)
    y = np.take(params, indices, axis=axis)
    dy = np.zeros(params.shape, np.float64)
    moved = np.moveaxis(dy, axis, 0)  # a view: scatter ones along the gathered axis
    np.add.at(moved, indices.ravel(), np.ones((indices.size,) + moved.shape[1:]))
    seen = []

    if mirrored:
        def compare_dy(params_grad):
            assert np.array_equal(dy, params_grad.numpy_list()[0])
            seen.append(1)
    else:
        def compare_dy(params_grad):
            assert np.array_equal(dy, params_grad.numpy())
            seen.append(1)

    gather_fn = _make_gather_fn(params, indices, axis, batch_dims, device_type, mirrored, compare_dy)
    check_point = flow.train.CheckPoint()
    check_point.init()
    if mirrored:
        of_y = gather_fn([params], [indices]).get().numpy_list()[0]
    else:
        of_y = gather_fn(params, indices).get().numpy()
    flow.sync_default_session()
    assert np.array_equal(y, of_y)
    assert seen == [1]


def _run(params_shape, indices_shape, axis, mirrored=None):
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["params_shape"] = [params_shape]
    arg_dict["indices_shape"] = [indices_shape]
    arg_dict["axis"] = [axis]
    arg_dict["batch_dims"] = [0]
    if mirrored is not None:
        arg_dict["mirrored"] = [mirrored]
    for arg in GenArgList(arg_dict):
        _compare_gather_with_tf(*arg)


def test_gather():
    _run((2, 8), (2, 1), 0)


def test_gather_case_1():
    _run((2, 10, 2), (2, 1), 0)


def test_gather_case_2():
    _run((200, 80), (150, 1), 0, mirrored=True)


def test_gather_case_3():
    _run((6, 15, 5, 2), (4, 3, 5), 1, mirrored=True)
