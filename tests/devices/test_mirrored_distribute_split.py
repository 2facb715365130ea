"""A mirrored op reading a consistent S(0) blob reads each device's piece (OneFlow's auto-converted
DistributeSplit, FindOrCreateMirroredLbiFromCompatibleConsistentBlob) and is inferred on that piece, so a
mirrored reduction over the batch axis of a consistent input is each device's own, as in OneFlow."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler.mirrored_split import SPLIT_PREFIX
from flowlab.compiler.sbp_infer import SbpInferError


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("reduce", ["reduce_mean", "reduce_sum"])
def test_a_mirrored_reduction_of_a_consistent_input_is_each_devices_own(devices, reduce):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((6, 3))) -> tp.ListNumpy:
        y = flow.math.relu(x)  # consistent, S(0)
        with flow.scope.mirrored_view():
            return getattr(flow.math, reduce)(y, axis=0)

    x = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
    pieces = job(x)
    assert len(pieces) == devices
    for got, rows in zip(pieces, np.split(np.maximum(x, 0), devices)):
        want = rows.mean(axis=0) if reduce == "reduce_mean" else rows.sum(axis=0)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    user = flow.default_session().job_set.job("job")
    (split_op,) = [op for op in user.ops if op.op_type == "distribute_split"]
    assert split_op.name == f"{SPLIT_PREFIX}0"
    assert split_op.input_lbns == ("relu_0/y_0",)
    assert user.blob_descs[split_op.output_lbns[0]].shape == (6 // devices, 3)  # one device's piece
    assert str(user.sbp_signatures[split_op.name]) == "{in: S(0), out: S(0)}"
    assert "distribute_split(%relu_0/y_0)" in str(user)


def test_the_split_is_one_per_blob_and_a_tp_numpy_return_joins_the_devices_results():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.mirrored_view():
            a = flow.math.reduce_sum(x, axis=0, keepdims=True)
            b = flow.math.reduce_max(x, axis=0, keepdims=True)
            return a + b

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    got = job(x)
    want = np.concatenate([r.sum(axis=0, keepdims=True) + r.max(axis=0, keepdims=True) for r in np.split(x, 2)])
    np.testing.assert_array_equal(got, want)
    user = flow.default_session().job_set.job("job")
    assert sum(op.op_type == "distribute_split" for op in user.ops) == 1


def test_a_mirrored_mean_loss_of_consistent_placeholders_trains_as_oneflow():
    """The docs' mirrored job with tp.Numpy placeholders: each device's mean loss over its rows, and the
    gradients of the devices' means summed (OneFlow's mirrored loss, dynamic: counted over every device) equal one
    device's SGD on the whole batch with the loss the sum of the two means divided by... NumPy says: the mean
    loss of each half, each scaled 1/2 (the loss count is one element per device)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=config)
    def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.ListNumpy:
        v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
        loss = flow.math.reduce_mean(flow.math.square(x + flow.cast_to_current_logical_view(v)))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(loss)
        return loss

    x = np.random.default_rng(5).standard_normal((4, 3)).astype(np.float32)
    losses = train(x)
    halves = np.split(x, 2)
    for got, rows in zip(losses, halves):
        np.testing.assert_allclose(got, ((rows + 0.5) ** 2).mean(), rtol=1e-6)
    # d(mean_i)/dv = 2 (rows_i + v).sum(0) / 6; the devices' gradients add; the loss count is 2 (one per device)
    grad = sum(2 * (rows + 0.5).sum(axis=0) / 6 for rows in halves) / 2
    np.testing.assert_allclose(flow.get_all_variables()["v"], 0.5 - 0.5 * grad, rtol=1e-5)


def test_a_gradient_flows_back_through_the_split_to_a_consistent_dense():
    """A consistent dense, then a mirrored per-device sum of squares: the split's gradient is a DistributeConcat
    (``<split>_grad``, consistent) joining the devices' gradients; the weight's update equals NumPy's."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.ListNumpy:
        h = flow.layers.dense(x, 2, use_bias=False, kernel_initializer=flow.constant_initializer(0.1), name="d")
        with flow.scope.mirrored_view():
            loss = flow.math.reduce_sum(flow.math.square(h), axis=0)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    x = np.random.default_rng(7).standard_normal((4, 3)).astype(np.float32)
    losses = train(x)
    w = np.full((2, 3), 0.1, np.float32)  # dense weight is (units, in) in flowlab/OneFlow
    for got, rows in zip(losses, np.split(x, 2)):
        np.testing.assert_allclose(got, ((rows @ w.T) ** 2).sum(axis=0), rtol=1e-5)
    # loss count: 2 elements per device, 2 devices -> 4; dL/dw = sum over rows of 2 h x^T
    grad = (2 * (x @ w.T)).T @ x / 4
    np.testing.assert_allclose(flow.get_all_variables()["d-weight"], w - 0.1 * grad, rtol=1e-5)
    user = flow.default_session().job_set.job("train")
    (concat,) = [op for op in user.ops if op.op_type == "distribute_concat"]
    assert concat.name == f"{SPLIT_PREFIX}0_grad" and concat.name not in user.mirrored_op_names


def test_rows_that_do_not_divide_evenly_keep_the_logical_inference_and_say_so():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((5, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.math.reduce_mean(x, axis=0)

    with pytest.raises(SbpInferError) as info:
        job(np.zeros((5, 3), np.float32))
    assert "rows divide evenly over the 2 devices" in str(info.value)
    assert "tp.ListNumpy.Placeholder" not in str(info.value)  # 5 rows: no one device's placeholder to name


@pytest.mark.parametrize("listed", [False, True])
def test_the_devices_results_cast_back_to_the_consistent_view_are_joined(listed):
    """cast_to_current_logical_view of the devices' own sums, from a consistent input's DistributeSplit or from
    per-device data: the consistent blob of the pieces (S(0), joined), never their total (a reduce_sum's P)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    holder = tp.ListNumpy.Placeholder((2, 3)) if listed else tp.Numpy.Placeholder((4, 3))

    @flow.global_function()
    def job(x: holder) -> tp.Numpy:
        with flow.scope.mirrored_view():
            sums = flow.math.reduce_sum(x, axis=0, keepdims=True)
        return flow.cast_to_current_logical_view(sums) * 1.0  # a consistent op on the joined sums

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    got = job([x[:2], x[2:]] if listed else x)
    np.testing.assert_array_equal(got, np.concatenate([x[:2].sum(axis=0, keepdims=True),
                                                       x[2:].sum(axis=0, keepdims=True)]))


def test_an_op_whose_shape_no_longer_fits_a_devices_piece_says_so_at_the_users_line():
    """A mirrored reshape written for the logical blob: on one device's piece (2, 3) its (12,) does not fit;
    OneFlow infers it on the piece too (while tracing, as flowlab now does), so the error names the op, its line
    and the split."""
    from flowlab.errors import OpInferError

    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.reshape(flow.math.relu(x), (12,))

    with pytest.raises(OpInferError, match=r"test_mirrored_distribute_split.py:\d+: op 'reshape_0' \(reshape\) "
                                           r"is inferred on one device's piece.*DistributeSplit.*cannot reshape "
                                           r"f32\[2,3\]"):
        job(np.zeros((4, 3), np.float32))
