"""Mirrored ops on several devices: what each device computes and the shapes its pieces have.

OneFlow (oneflow-distributed.md §2.4): a mirrored op is one sub-op per device, working on that device's piece.
A consistent S(0) blob read by a mirrored op is split into per-device pieces (DistributeSplit); a mirrored blob
made from per-device data (``ListNumpy``) is its pieces. A mirrored blob's ``tp.ListNumpy`` return gives each
device's piece.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler.slices import logical_desc


@pytest.mark.parametrize("devices", [2, 3])
def test_a_mirrored_op_on_a_consistent_split_blob_gives_each_device_its_rows(devices):
    """The consistent blob's desc is logical, so the mirrored op inferred from it has a logical desc too; its
    pieces are that blob's balanced slices (4 rows over 3 devices: 2, 1, 1), not the logical shape again."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.ListNumpy:
        y = flow.math.relu(x)  # consistent, S(0)
        with flow.scope.mirrored_view():
            return flow.math.square(y)

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    pieces = job(x)
    want = np.array_split(x * x, devices)
    assert [p.shape for p in pieces] == [w.shape for w in want]
    for got, ref in zip(pieces, want):
        np.testing.assert_array_equal(got, ref)
    user = flow.default_session().job_set.job("job")
    assert logical_desc(user, "square_0/y_0").shape == (4, 3)  # was (4 * devices, 3): the split axis multiplied


def test_a_mirrored_op_on_per_device_data_has_one_devices_piece_as_its_desc():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.math.square(x)

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    pieces = job([x[:2], x[2:]])
    np.testing.assert_array_equal(np.concatenate(pieces), x * x)
    user = flow.default_session().job_set.job("job")
    assert user.blob_descs["square_0/y_0"].shape == (2, 3)
    assert logical_desc(user, "square_0/y_0").shape == (4, 3)


def test_a_mirrored_loss_inferred_from_consistent_blobs_is_counted_once():
    """The mirrored loss's desc is the logical (4, 3): 12 elements in all, not 12 per device. Training equals
    one-device SGD on the whole batch (NumPy: v -= lr * mean(2 (x + v)) over the rows)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.ListNumpy:
        v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
        with flow.scope.mirrored_view():
            loss = flow.math.square(flow.math.relu(x) + v)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(loss)
        return loss

    x = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    pieces = train(x)
    relu = np.maximum(x, 0)
    np.testing.assert_allclose(np.concatenate(pieces), (relu + 0.5) ** 2, rtol=1e-6)
    user = flow.default_session().job_set.job("train")
    assert user.op("v_optimizer").attrs["scale"] == pytest.approx(1 / 12)
    want = 0.5 - 0.5 * (2 * (relu + 0.5)).sum(axis=0) / 12
    np.testing.assert_allclose(flow.get_all_variables()["v"], want, rtol=1e-6)


BATCH, FEATURES, CLASSES, STEPS = 10, 12, 5, 4


def _mlp_mean_loss(images, labels):
    hidden = flow.layers.dense(images, 16, activation=flow.nn.relu, kernel_initializer=flow.truncated_normal(0.1),
                               name="dense1")
    logits = flow.layers.dense(hidden, CLASSES, kernel_initializer=flow.truncated_normal(0.1), name="dense2")
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    return flow.math.reduce_mean(loss)


def _batches():
    rng = np.random.default_rng(11)
    return [(rng.standard_normal((BATCH, FEATURES)).astype(np.float32),
             rng.integers(0, CLASSES, BATCH).astype(np.int32)) for _ in range(STEPS)]


def test_mirrored_reduce_mean_over_the_batch_reduces_each_devices_piece():
    """OneFlow's mirrored_strategy.py with the loss averaged by flow.math.reduce_mean: in the mirrored view each
    device reduces its own piece (a sub-op per device), so the ListNumpy return is each device's own mean, and
    the loss count is one element per device: training on equal halves is one-device SGD on the batch mean."""
    flow.clear_default_session()

    @flow.global_function(type="train")
    def one(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
            labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        loss = _mlp_mean_loss(images, labels)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    want = [one(x, y) for x, y in _batches()]
    want_vars = flow.get_all_variables()

    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())
    half = BATCH // 2

    @flow.global_function(type="train", function_config=config)
    def mirrored(images: tp.ListNumpy.Placeholder((half, FEATURES)),
                 labels: tp.ListNumpy.Placeholder((half,), dtype=flow.int32)) -> tp.ListNumpy:
        loss = _mlp_mean_loss(images, labels)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    for step, (x, y) in enumerate(_batches()):
        pieces = mirrored([x[:half], x[half:]], [y[:half], y[half:]])
        assert [p.shape for p in pieces] == [(1,), (1,)]
        np.testing.assert_allclose(np.mean(pieces), want[step], rtol=1e-5)
    got_vars = flow.get_all_variables()
    for name in ("dense1-weight", "dense1-bias", "dense2-weight", "dense2-bias"):
        np.testing.assert_allclose(got_vars[name], want_vars[name], rtol=1e-5, atol=1e-7, err_msg=name)
    user = flow.default_session().job_set.job("mirrored")
    mean = next(op for op in user.ops if op.op_type == "reduce_mean")
    assert {str(s) for s in user.sbp_signatures[mean.name].bn_in_op2sbp_parallel.values()} == {"S(0)"}


def test_mirrored_reduce_mean_returns_each_devices_mean():
    flow.clear_default_session()
    flow.config.cpu_device_num(3)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.math.reduce_mean(x, axis=0)

    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    pieces = job([x[:2], x[2:4], x[4:]])
    for got, piece in zip(pieces, np.split(x, 3)):
        np.testing.assert_allclose(got, piece.mean(axis=0), rtol=1e-6)


def test_a_mirrored_reduction_of_a_consistent_blob_is_an_error_at_the_users_line():
    """Its shape came from the logical blob, so per-device means would not fit it: a clear error, not a guess."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.math.reduce_mean(x, axis=0)

    from flowlab.compiler.sbp_infer import SbpInferError

    with pytest.raises(SbpInferError, match=r"test_multi_device_mirrored.py:\d+: mirrored op 'reduce_mean_0' "
                                            r"\(reduce_mean\) reads only consistent blobs"):
        job(np.zeros((4, 3), np.float32))


def test_explain_sbp_says_a_mirrored_op_runs_per_device():
    test_mirrored_reduce_mean_returns_each_devices_mean()
    user = flow.default_session().job_set.job("job")
    text = str(flow.debug.explain_sbp(user, "reduce_mean_0"))
    assert "chosen: {input_tensor_0: S(0), output_tensor_0: S(0)}" in text
    assert "note: mirrored: no signature of reduce_mean takes its inputs as they lie" in text
    assert flow.debug.explain_sbp(user, "reduce_mean_0").to_dict()["notes"]


def test_the_views_sbp_section_carries_the_note():
    from flowlab.viz.payload_details import sbp_sections

    test_mirrored_reduce_mean_returns_each_devices_mean()
    rows = sbp_sections(flow.default_session().job_set.job("job"))["reduce_mean_0"]["rows"]
    assert any(k == "note" and "each device runs it on its own piece" in v for k, v in rows)


def test_a_mirrored_reduce_sum_returns_each_devices_sum():
    """reduce_sum over the batch has an exact signature, S(0) -> P, but a mirrored return of it gives each device's
    own sum (OneFlow's per-device sub-ops), not their total."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.math.reduce_sum(x, axis=0)

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    pieces = job([x[:2], x[2:]])
    assert len(pieces) == 2
    np.testing.assert_allclose(pieces[0], x[:2].sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(pieces[1], x[2:].sum(axis=0), rtol=1e-6)


def test_a_mirrored_summed_loss_returns_each_devices_sum_and_trains_on_their_count():
    """loss = reduce_sum(per-example loss) per device: each device's piece is its own sum, and the loss count is one
    element per device (OneFlow's DynamicLossInstanceNum), so a step is one-device SGD on the whole batch's summed
    loss with half the learning rate."""
    def one_step(devices: int, lr: float):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)
        config = flow.function_config()
        config.default_logical_view(flow.scope.mirrored_view() if devices > 1 else flow.scope.consistent_view())
        rows = BATCH // devices
        holder = tp.ListNumpy if devices > 1 else tp.Numpy

        @flow.global_function(type="train", function_config=config)
        def train(images: holder.Placeholder((rows, FEATURES)),
                  labels: holder.Placeholder((rows,), dtype=flow.int32)) -> holder:
            hidden = flow.layers.dense(images, 16, activation=flow.nn.relu,
                                       kernel_initializer=flow.truncated_normal(0.1), name="dense1")
            logits = flow.layers.dense(hidden, CLASSES, kernel_initializer=flow.truncated_normal(0.1), name="dense2")
            loss = flow.math.reduce_sum(flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [lr]), momentum=0).minimize(loss)
            return loss

        x, y = _batches()[0]
        if devices > 1:
            out = train([x[:rows], x[rows:]], [y[:rows], y[rows:]])
        else:
            out = train(x, y)
        return out, flow.get_all_variables()

    whole, want_vars = one_step(1, 0.05)
    pieces, got_vars = one_step(2, 0.1)
    assert [p.shape for p in pieces] == [(1,), (1,)]
    np.testing.assert_allclose(pieces[0] + pieces[1], whole, rtol=1e-5)
    assert not np.allclose(pieces[0], whole)  # each device's own sum, not the total
    for name in ("dense1-weight", "dense1-bias", "dense2-weight", "dense2-bias"):
        np.testing.assert_allclose(got_vars[name], want_vars[name], rtol=1e-5, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_broadcast_mirrored_return_gives_every_device_the_whole_blob(devices):
    """A mirrored blob that lies B (a variable cast into the mirrored view, a reduction of it) is each device's
    whole blob: tp.ListNumpy returns one array per device, each the whole blob (OneFlow returns each device's
    blob of the mirrored list), never one array."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> Tuple[tp.ListNumpy, tp.ListNumpy, tp.ListNumpy]:
        with flow.scope.mirrored_view():
            v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
            v = flow.cast_to_current_logical_view(v)
            return v * 2.0, flow.math.reduce_sum(v, axis=0, keepdims=True), flow.math.square(x)

    x = np.arange(6 * devices, dtype=np.float32).reshape(2 * devices, 3)
    doubled, total, squares = job(list(np.split(x, devices)))
    assert len(doubled) == devices and len(total) == devices
    for got in doubled:
        np.testing.assert_array_equal(got, np.full(3, 1.0, np.float32))
    for got in total:
        np.testing.assert_array_equal(got, np.array([1.5], np.float32))
    doubled[0][0] = 7.0  # each device's array is its own
    assert doubled[-1][0] == 1.0
    for got, piece in zip(squares, np.split(x, devices)):
        np.testing.assert_array_equal(got, piece * piece)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_mirrored_return_split_on_axis_1_gives_each_devices_piece(devices):
    """A mirrored transpose of per-device rows lies S(1): each device's piece is its own rows transposed."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.transpose(x, perm=[1, 0])

    x = np.arange(6 * devices, dtype=np.float32).reshape(2 * devices, 3)
    pieces = job(list(np.split(x, devices)))
    assert len(pieces) == devices
    for got, piece in zip(pieces, np.split(x, devices)):
        np.testing.assert_array_equal(got, piece.T)


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("reduce", ["reduce_mean", "reduce_sum"])
def test_a_mirrored_reduction_of_a_consistent_blob_says_what_to_write(devices, reduce):
    """OneFlow splits a consistent S(0) blob into per-device pieces for a mirrored op (DistributeSplit) and each
    device reduces its own rows; flowlab has only the logical shapes there, so the error names the op, the blob,
    where the blob was made, and the two ways to write it: per-device data of one device's rows (the placeholder
    with its exact shape), or the consistent view. reduce_sum has an S(0) -> P signature, whose P (the total) is
    not any device's own sum, so returned per device it is the same error (it was a one-array list before)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((6, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return getattr(flow.math, reduce)(x, axis=0)

    from flowlab.compiler.sbp_infer import SbpInferError

    with pytest.raises(SbpInferError) as info:
        job(np.zeros((6, 3), np.float32))
    text = str(info.value)
    assert f"mirrored op '{reduce}_0' ({reduce}) reads only consistent blobs or mirrored ones" in text
    assert "'Input_0/out' (S(0), made by 'Input_0' at test_multi_device_mirrored.py:" in text
    assert "DistributeSplit" in text
    assert f"tp.ListNumpy.Placeholder(({6 // devices}, 3))" in text
    assert "flow.scope.consistent_view()" in text


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("per_device_data", [True, False])
def test_watching_a_mirrored_blob_sees_it_consistently(devices, per_device_data):
    """flow.watch / flow.watch_diff in the mirrored view hand the handler the blob seen consistently (OneFlow's
    LocalMirroredTensor.numpy(): the pieces joined on their split axis). The watch is the runtime's, not a
    per-device op: it was traced as a mirrored foreign_watch with only a B signature, a compile error."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    rows = 6 // devices if per_device_data else 6
    holder = tp.ListNumpy if per_device_data else tp.Numpy
    seen, seen_diff = [], []

    @flow.global_function(type="train")
    def train(x: holder.Placeholder((rows, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
            y = flow.math.square(x + flow.cast_to_current_logical_view(v))
            flow.watch(y, seen.append)
            flow.watch_diff(y, seen_diff.append)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(y)
            return y

    x = np.arange(18, dtype=np.float32).reshape(6, 3) / 10
    pieces = train(list(np.split(x, devices)) if per_device_data else x)
    want = (x + 0.5) ** 2
    np.testing.assert_allclose(np.concatenate(pieces), want, rtol=1e-6)
    assert len(seen) == 1 and len(seen_diff) == 1
    np.testing.assert_allclose(seen[0], want, rtol=1e-6)
    np.testing.assert_array_equal(seen_diff[0], np.ones((6, 3), np.float32))  # of the summed loss (seed ones)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_mirrored_job_returns_a_consistent_blob_per_device(devices):
    """OneFlow adds a job's return ops in the job's default view (compile_context.CurJobAddOp, after the function
    returned): in a mirrored job a returned consistent blob is read by a mirrored return, so a B blob (a variable)
    comes back once per device (DistributeClone) and an S(0) one as its per-device rows (DistributeSplit). A
    consistent P blob is no device's own and comes back whole, as before."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=config)
    def job(x: tp.Numpy.Placeholder((7, 3))) -> Tuple[tp.ListNumpy, tp.ListNumpy, tp.ListNumpy]:
        v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
        with flow.scope.consistent_view():
            rows = flow.math.relu(x)
            total = flow.math.reduce_sum(x)
        return v, rows, total

    x = np.arange(21, dtype=np.float32).reshape(7, 3) - 10
    v, rows, total = job(x)
    assert len(v) == devices
    for got in v:
        np.testing.assert_array_equal(got, np.full(3, 0.5, np.float32))
    assert [r.shape for r in rows] == [p.shape for p in np.array_split(x, devices)]
    np.testing.assert_array_equal(np.concatenate(rows), np.maximum(x, 0))
    assert len(total) == 1
    np.testing.assert_allclose(total[0], [x.sum()], rtol=1e-6)


def test_the_debugger_gives_a_mirrored_jobs_returns_per_device():
    """The debugger's result is put together as a call's (the pulled MirroredList): per device, and tp.Numpy joined."""
    flow.clear_default_session()
    flow.config.cpu_device_num(3)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=config)
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> Tuple[tp.ListNumpy, tp.Numpy, tp.ListNumpy]:
        v = flow.cast_to_current_logical_view(
            flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5)))
        return v, flow.math.square(x), flow.transpose(x, perm=[1, 0])

    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    pieces = list(np.split(x, 3))
    want = job(pieces)
    dbg = flow.debug(job, pieces)
    dbg.continue_()
    v, squares, transposed = dbg.result
    assert len(v) == 3 and len(transposed) == 3
    for got in v:
        np.testing.assert_array_equal(got, np.full(3, 0.5, np.float32))
    np.testing.assert_array_equal(squares, x * x)
    for got, piece, called in zip(transposed, pieces, want[2]):
        np.testing.assert_array_equal(got, piece.T)
        np.testing.assert_array_equal(called, piece.T)


def test_each_returned_leaf_follows_its_own_annotation_on_one_device():
    """A tp.Numpy beside a tp.ListNumpy in a Tuple is one array (it was a one-array list: the whole annotation's
    kinds decided every leaf); a ListNumpy leaf of a one-device job is a one-array list."""
    flow.clear_default_session()

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> Tuple[tp.Numpy, tp.ListNumpy, tp.Bundle[tp.Numpy]]:
        return x, x, {"a": [x]}

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    whole, pieces, bundle = job([x])
    np.testing.assert_array_equal(whole, x)
    assert isinstance(pieces, list) and len(pieces) == 1
    np.testing.assert_array_equal(pieces[0], x)
    assert isinstance(bundle["a"], list) and len(bundle["a"]) == 1
    np.testing.assert_array_equal(bundle["a"][0], x)


def test_catch_nan_takes_a_mirrored_jobs_per_device_arguments():
    """catch_nan checks the call's arguments as a call does: one array per device for a ListNumpy placeholder."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.math.square(x, name="sq")

    x = np.ones((4, 3), np.float32)
    x[3, 1] = 1e30  # the first call of the job: catch_nan names its jobs from the arguments
    with flow.debug.catch_nan() as catcher:
        job([x[:2], x[2:]])
    assert catcher.caught and catcher.op == "sq"
