"""OneFlow v0.3.4 oneflow/python/test/ops/test_unsorted_segment_sum_fw_bw.py, ported: CPU only (case_1, a GPU
case in OneFlow, runs on the CPU), tf.math.unsorted_segment_sum -> np.add.at; its gradient (the loss is the sum of
y, so dy is ones, gathered back by the ids) written out."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as oft

from .of_util import GenArgList, TestCase


def _random_inputs(data_shape, segment_ids_shape, axis, num_segments):
    data = np.random.rand(*data_shape).astype(np.float32)
    segment_ids = np.random.randint(
        low=0, high=num_segments, size=segment_ids_shape, dtype=np.int32
    )
    return data, segment_ids


def _make_unsorted_segment_sum_fn(
    data, segment_ids, axis, num_segments, device_type, mirrored, compare_fn
):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)
    if mirrored:
        func_config.default_logical_view(flow.scope.mirrored_view())
    else:
        func_config.default_logical_view(flow.scope.consistent_view())

    def do_unsorted_segment_sum(x_blob, i_blob):
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable(
                "data",
                shape=data.shape,
                dtype=flow.float32,
                initializer=flow.constant_initializer(0),
            )
            x = x + x_blob
            y = flow.math.unsorted_segment_sum(
                x, i_blob, axis=axis, num_segments=num_segments
            )
            flow.optimizer.SGD(
                flow.optimizer.PiecewiseConstantScheduler([], [1e-3]), momentum=0
            ).minimize(y)
        flow.watch_diff(x, compare_fn)
        return y

    if mirrored:

        @flow.global_function(type="train", function_config=func_config)
        def unsorted_segment_sum_fn(
            data_def: oft.ListNumpy.Placeholder(data.shape, dtype=flow.float),
            segment_ids_def: oft.ListNumpy.Placeholder(
                segment_ids.shape, dtype=flow.int32
            ),
        ):
            return do_unsorted_segment_sum(data_def, segment_ids_def)

    else:

        @flow.global_function(type="train", function_config=func_config)
        def unsorted_segment_sum_fn(
            data_def: oft.Numpy.Placeholder(data.shape, dtype=flow.float),
            segment_ids_def: oft.Numpy.Placeholder(segment_ids.shape, dtype=flow.int32),
        ):
            return do_unsorted_segment_sum(data_def, segment_ids_def)

    return unsorted_segment_sum_fn


def _compare_unsorted_segment_sum_with_tf(
    test_case,
    device_type,
    data_shape,
    segment_ids_shape,
    axis,
    num_segments,
    mirrored=False,
):
    data, segment_ids = _random_inputs(
        data_shape, segment_ids_shape, axis, num_segments
    )
    # tf.math.unsorted_segment_sum and its gradient (the output's gradient, ones, gathered by the ids)
    y = np.zeros((num_segments,) + data.shape[1:], np.float32)
    np.add.at(y, segment_ids, data)
    dy = np.ones(data.shape, np.float32)
    if mirrored:

        def compare_dy(data_grad):
            test_case.assertTrue(np.array_equal(dy, data_grad.numpy_list()[0]))

    else:

        def compare_dy(data_grad):
            test_case.assertTrue(np.array_equal(dy, data_grad.numpy()))

    unsorted_segment_sum_fn = _make_unsorted_segment_sum_fn(
        data, segment_ids, axis, num_segments, device_type, mirrored, compare_dy
    )

    check_point = flow.train.CheckPoint()
    check_point.init()

    if mirrored:
        of_y = unsorted_segment_sum_fn([data], [segment_ids]).get().numpy_list()[0]
    else:
        of_y = unsorted_segment_sum_fn(data, segment_ids).get().numpy()
    test_case.assertTrue(np.allclose(y, of_y, rtol=1e-5, atol=1e-5))


def test_unsorted_segment_sum():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["data_shape"] = [(300, 1, 4)]
    arg_dict["segment_ids_shape"] = [(300)]
    arg_dict["axis"] = [0]
    arg_dict["num_segments"] = [2]

    for arg in GenArgList(arg_dict):
        _compare_unsorted_segment_sum_with_tf(test_case, *arg)


def test_unsorted_segment_sum_case_1():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["data_shape"] = [(200, 10, 20)]
    arg_dict["segment_ids_shape"] = [(200)]
    arg_dict["axis"] = [0]
    arg_dict["num_segments"] = [5]
    for arg in GenArgList(arg_dict):
        _compare_unsorted_segment_sum_with_tf(test_case, *arg)
