"""Mirrored ops on several devices: what each device computes and the shapes its pieces have.

OneFlow (oneflow-distributed.md §2.4): a mirrored op is one sub-op per device, working on that device's piece.
A consistent S(0) blob read by a mirrored op is split into per-device pieces (DistributeSplit); a mirrored blob
made from per-device data (``ListNumpy``) is its pieces. A mirrored blob's ``tp.ListNumpy`` return gives each
device's piece.
"""

from __future__ import annotations

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
    """Rows that do not divide evenly (5 over 2) have no one piece shape: the mean's shape came from the logical
    blob, so per-device means would not fit it: a clear error, not a guess (even rows are split, as OneFlow)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((5, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.math.reduce_mean(x, axis=0)

    from flowlab.compiler.sbp_infer import SbpInferError

    with pytest.raises(SbpInferError, match=r"test_multi_device_mirrored.py:\d+: mirrored op 'reduce_mean_0' "
                                            r"\(reduce_mean\) reads only consistent blobs"):
        job(np.zeros((5, 3), np.float32))


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
@pytest.mark.parametrize("reduce", ["reduce_mean", "reduce_sum"])
def test_a_mirrored_reduction_of_a_consistent_blob_says_what_to_write(devices, reduce):
    """OneFlow splits a consistent S(0) blob into per-device pieces for a mirrored op (DistributeSplit) and each
    device reduces its own rows; flowlab does too where the rows divide evenly (tests/
    test_mirrored_distribute_split.py). Where they do not (7 rows), the error names the op, the blob, where the
    blob was made, and the consistent view."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((7, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return getattr(flow.math, reduce)(x, axis=0)

    from flowlab.compiler.sbp_infer import SbpInferError

    with pytest.raises(SbpInferError) as info:
        job(np.zeros((7, 3), np.float32))
    text = str(info.value)
    assert f"mirrored op '{reduce}_0' ({reduce}) reads only consistent blobs or mirrored ones" in text
    assert "'Input_0/out' (S(0), made by 'Input_0' at test_multi_device_mirrored.py:" in text
    assert "DistributeSplit" in text and f"rows divide evenly over the {devices} devices" in text
    assert "flow.scope.consistent_view()" in text


def test_a_mirrored_mean_loss_of_consistent_placeholders_trains_as_per_device_data_does():
    """The docs' mirrored job with tp.Numpy placeholders and a reduce_mean loss: each placeholder's S(0) rows go to
    the devices through a DistributeSplit, so it computes and trains exactly as the same job with tp.ListNumpy
    placeholders of one device's rows (OneFlow's mirrored_strategy.py), step by step."""
    def run(listed: bool):
        flow.clear_default_session()
        flow.config.cpu_device_num(2)
        config = flow.function_config()
        config.default_logical_view(flow.scope.mirrored_view())
        rows = BATCH // 2 if listed else BATCH
        holder = tp.ListNumpy if listed else tp.Numpy

        @flow.global_function(type="train", function_config=config)
        def train(images: holder.Placeholder((rows, FEATURES)),
                  labels: holder.Placeholder((rows,), dtype=flow.int32)) -> tp.ListNumpy:
            loss = _mlp_mean_loss(images, labels)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
            return loss

        losses = [train(list(np.split(x, 2)), list(np.split(y, 2))) if listed else train(x, y)
                  for x, y in _batches()]
        return losses, flow.get_all_variables()

    want, want_vars = run(listed=True)
    got, got_vars = run(listed=False)
    for step_got, step_want in zip(got, want):
        assert [p.shape for p in step_got] == [(1,), (1,)]
        np.testing.assert_array_equal(np.stack(step_got), np.stack(step_want))
    for name, value in want_vars.items():
        np.testing.assert_array_equal(got_vars[name], value, err_msg=name)
