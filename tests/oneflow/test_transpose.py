"""OneFlow v0.3.4 oneflow/python/test/ops/test_transpose.py, ported: CPU only, tf.transpose -> np.transpose (the
gradient is dy transposed by the inverse permutation)."""

from collections import OrderedDict

import numpy as np

import flowlab as flow
import flowlab.typing as tp

from .of_util import GenArgList, test_global_storage


def compare_with_tensorflow(device_type, input_shape, perm):
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=func_config)
    def TransposeJob():
        with flow.scope.placement(device_type, "0:0"):
            x = flow.get_variable("input", shape=input_shape, dtype=flow.float,
                                  initializer=flow.random_uniform_initializer(minval=2, maxval=5), trainable=True)
            loss = flow.transpose(x, perm)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(loss)
            flow.watch(x, test_global_storage.Setter("x"))
            flow.watch_diff(x, test_global_storage.Setter("x_diff"))
            flow.watch(loss, test_global_storage.Setter("loss"))
            flow.watch_diff(loss, test_global_storage.Setter("loss_diff"))
            return loss

    check_point = flow.train.CheckPoint()
    check_point.init()
    of_out = TransposeJob().get()
    x = test_global_storage.Get("x")
    ref_dx = np.transpose(test_global_storage.Get("loss_diff"), np.argsort(perm))
    assert np.allclose(of_out.numpy(), np.transpose(x, perm), rtol=1e-5, atol=1e-5)
    assert np.allclose(test_global_storage.Get("x_diff"), ref_dx, rtol=1e-5, atol=1e-5)


def _run(shape, perms):
    arg_dict = OrderedDict()
    arg_dict["device_type"] = ["cpu"]
    arg_dict["input_shape"] = [shape]
    arg_dict["perm"] = perms
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow(*arg)


def test_transpose():
    _run((10, 11, 12, 13), [(2, 0, 1, 3), (1, 0, 2, 3), (3, 2, 1, 0), (3, 1, 2, 0)])


def test_transpose2():
    _run((10, 11, 12), [(2, 0, 1), (1, 0, 2), (2, 1, 0), (1, 2, 0)])


def test_transpose3():
    _run((10, 11), [(1, 0), (0, 1)])


def test_transpose4():
    # Test the param "batch_axis_non_change"
    @flow.global_function()
    def transpose_batchaxis_non_change_job(x: tp.Numpy.Placeholder((3, 3), dtype=flow.float, batch_axis=0)) -> None:
        pre_batch_axis = x.batch_axis
        transpose_blob = flow.transpose(x, perm=[1, 0], batch_axis_non_change=True)
        tranposed_batch_axis = transpose_blob.batch_axis
        assert np.array_equal(pre_batch_axis, tranposed_batch_axis)

    x = np.array([[1, 1, 1], [2, 2, 2], [3, 3, 3]]).astype(np.float32)
    transpose_batchaxis_non_change_job(x)


def test_transpose_dim6():
    _run((2, 3, 4, 5, 6, 7), [(2, 0, 1, 3, 5, 4)])
