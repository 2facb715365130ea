"""OneFlow's model-parallel loss, ``sparse_softmax_cross_entropy_ms`` (oneflow-distributed.md §2.2, §2.3, §3.4).

The docs' mixed-parallel MLP (dense2 with ``model_distribute=split(0)``, so its logits lie S(1)) with the logits
tagged split on the class axis, as OneFlow's test_sparse_softmax_cross_entropy_ms.py tags them: the loss stays
model parallel (no gather of the class axis), its softmax's max and sum are reduced across the devices by
SplitSparseSoftmaxCrossEntropyOpPass's ops, and training equals the one-device run and NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

# the compiled segment (and the generated call) must run by a given call: compiled in the call that fuses
pytestmark = pytest.mark.usefixtures("fuse_in_call")

BATCH, FEATURES, HIDDEN, CLASSES, STEPS, LR, BETA = 6, 8, 10, 7, 4, 0.1, 0.9


def _batches() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(5)
    return [(rng.standard_normal((BATCH, FEATURES)).astype(np.float32),
             rng.integers(0, CLASSES, BATCH).astype(np.int32)) for _ in range(STEPS)]


def _initial() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(9)
    return {"dense1-weight": rng.normal(0, 0.3, (HIDDEN, FEATURES)).astype(np.float32),
            "dense1-bias": rng.normal(0, 0.1, HIDDEN).astype(np.float32),
            "dense2-weight": rng.normal(0, 0.3, (CLASSES, HIDDEN)).astype(np.float32),
            "dense2-bias": rng.normal(0, 0.1, CLASSES).astype(np.float32)}


def train(devices: int, tagged: bool = True):
    """-> (losses per step, variables, session)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
                  labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        hidden = flow.layers.dense(images, HIDDEN, activation=flow.nn.relu, name="dense1")
        logits = flow.layers.dense(hidden, CLASSES, name="dense2", model_distribute=flow.distribute.split(0))
        if tagged:
            logits = logits.with_distribute(flow.distribute.split(1))
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=BETA).minimize(loss)
        return loss

    flow.load_variables(_initial())
    losses = [train_job(x, y) for x, y in _batches()]
    return np.array(losses), flow.get_all_variables(), flow.default_session()


def numpy_reference() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The same steps in float64 NumPy: mean-free per-example loss, gradients divided by the batch (the loss's
    element count), SGD with momentum (v = beta v - lr g; w += v)."""
    w = {k: v.astype(np.float64) for k, v in _initial().items()}
    v = {k: np.zeros_like(a) for k, a in w.items()}
    losses = []
    for x, y in _batches():
        pre = x @ w["dense1-weight"].T + w["dense1-bias"]
        h = np.maximum(pre, 0)
        logits = h @ w["dense2-weight"].T + w["dense2-bias"]
        shifted = logits - logits.max(axis=1, keepdims=True)
        prob = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        rows = np.arange(BATCH)
        losses.append(-np.log(prob[rows, y]))
        dlogits = prob.copy()
        dlogits[rows, y] -= 1
        dlogits /= BATCH
        dh = (dlogits @ w["dense2-weight"]) * (pre > 0)
        grads = {"dense2-weight": dlogits.T @ h, "dense2-bias": dlogits.sum(axis=0),
                 "dense1-weight": dh.T @ x, "dense1-bias": dh.sum(axis=0)}
        for k, g in grads.items():
            v[k] = BETA * v[k] - LR * g
            w[k] = w[k] + v[k]
    return np.array(losses), w


@pytest.fixture(scope="module")
def one_device():
    losses, variables, _ = train(1, tagged=False)
    return losses, variables


@pytest.mark.parametrize("devices", [1, 2, 3])  # 7 classes over 3 devices: 3, 2, 2
def test_model_parallel_loss_trains_like_one_device_and_numpy(one_device, devices):
    losses, variables, _ = train(devices)
    np.testing.assert_allclose(losses, one_device[0], rtol=1e-5)
    for name, value in one_device[1].items():
        if name.startswith("dense"):
            np.testing.assert_allclose(variables[name], value, rtol=1e-5, atol=1e-7, err_msg=f"{name} on {devices}")
    want_losses, want_vars = numpy_reference()
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for name, value in want_vars.items():
        np.testing.assert_allclose(variables[name], value, rtol=1e-4, atol=1e-6, err_msg=f"{name} vs NumPy")


def test_the_pass_replaces_the_loss_by_oneflows_decomposition():
    _, _, session = train(2)
    job = session.job_set.job("train_job")
    assert job.op("softmax_loss").op_type == "sparse_cross_entropy_ms"
    assert not any(op.op_type == "sparse_softmax_cross_entropy_ms" for op in job.ops)
    sig = {op.name.removeprefix("softmax_loss-split_softmax_"): {bn: str(s) for bn, s in
                                                                  job.sbp_signatures[op.name].bn_in_op2sbp_parallel.items()}
           for op in job.ops if op.name.startswith("softmax_loss")}
    assert sig == {
        "reduce_max_device_stage": {"in_0": "S(1)", "out_0": "S(1)", "mask_0": "S(1)", "count_0": "S(1)"},
        "reduce_max_global_stage": {"in_0": "B", "device_count_0": "B", "out_0": "B", "mask_0": "B"},
        "sub_max": {"x_0": "S(1)", "y_0": "B", "z_0": "S(1)"},
        "exp": {"x_0": "S(1)", "y_0": "S(1)"},
        "reduce_sum": {"input_tensor_0": "S(1)", "output_tensor_0": "P"},
        "div": {"x_0": "S(1)", "y_0": "B", "z_0": "S(1)"},
        "softmax_loss": {"prediction_0": "S(1)", "label_0": "B", "out_0": "P"},
    }
    # the gradient reads the decomposition's softmax, and the logits' gradient stays split on the classes
    grad = next(op for op in job.ops if op.op_type == "sparse_softmax_cross_entropy_ms_grad")
    assert grad.inputs["prob"] == ("softmax_loss-split_softmax_div/z_0",)
    assert str(job.sbp_signatures[grad.name]["dx_0"]) == "S(1)"
    # one column of device maxima per device; each device holds its own
    assert job.blob_descs["softmax_loss-split_softmax_reduce_max_device_stage/out_0"].shape == (BATCH, 2)
    assert job.op("softmax_loss-split_softmax_reduce_max_device_stage").created_by == \
        "SplitSparseSoftmaxCrossEntropyOpPass"


def _boxing_of(plan, lbn: str) -> list:
    return [t for t in plan.tasks_of_job("train_job") if t.is_boxing and t.exec_sequence[0].attrs.get("lbi") == lbn]


@pytest.mark.parametrize("devices", [2, 3])
def test_plan_boxes_the_device_maxima_the_sum_and_the_loss_not_the_logits(devices):
    _, _, session = train(devices)
    plan = session.plan
    assert len(plan.tasks_of_op("train_job", "softmax_loss")) == devices
    # the devices' maxima are gathered (S(1) -> B: one copy per device), the partial sums of exps added and
    # broadcast (P -> B: reduce-scatter then all-gather), the labels gathered (S(0) -> B)
    maxima = _boxing_of(plan, "softmax_loss-split_softmax_reduce_max_device_stage/out_0")
    assert sorted(t.op_types for t in maxima) == [("slice_boxing_copy",)] * devices
    sums = _boxing_of(plan, "softmax_loss-split_softmax_reduce_sum/output_tensor_0")
    assert sorted(t.op_types for t in sums) == sorted([("slice_boxing_add",)] * devices +
                                                      [("slice_boxing_copy",)] * devices)
    assert _boxing_of(plan, "Input_1/out")
    # the model-parallel logits and their softmax are never moved: no class axis is gathered
    for lbn in ("dense2-bias_add/out_0", "softmax_loss-split_softmax_div/z_0", "softmax_loss-split_softmax_exp/y_0"):
        assert not _boxing_of(plan, lbn), lbn
    # the loss is a partial sum of each device's classes: added before it is returned
    assert any(t.op_types == ("slice_boxing_add",) for t in _boxing_of(plan, "softmax_loss/out_0"))


def test_explain_sbp_shows_the_loss_signature_and_its_boxing():
    _, _, session = train(2)
    explained = flow.debug.explain_sbp(session.job_set.job("train_job"), "softmax_loss")
    text = str(explained)
    assert "chosen: {prediction_0: S(1), label_0: B, out_0: P}" in text
    assert "hints: prediction_0: S(1)" in text
    assert "label_0: S(0) @cpu:0:0-1 -> B @cpu:0:0-1" in text
    assert explained.to_dict()["op_type"] == "sparse_cross_entropy_ms"


@pytest.mark.parametrize("devices", [2, 3])
def test_untagged_logits_take_the_plain_loss_which_gathers_the_classes(one_device, devices):
    """The docs' mixed_parallel_mlp.py does not tag its logits: the plain op, all S(0), so boxing moves the logits
    from S(1) to S(0) (§3.4), and no decomposition is made; it trains like one device too."""
    losses, variables, session = train(devices, tagged=False)
    np.testing.assert_allclose(losses, one_device[0], rtol=1e-5)
    for name, value in one_device[1].items():
        np.testing.assert_allclose(variables[name], value, rtol=1e-5, atol=1e-7, err_msg=f"{name} on {devices}")
    job = session.job_set.job("train_job")
    assert job.op("softmax_loss").op_type == "sparse_softmax_cross_entropy"
    assert not any(op.name.startswith("softmax_loss-split_softmax") for op in job.ops)
    assert _boxing_of(session.plan, "dense2-bias_add/out_0")


def test_a_label_outside_the_classes_is_an_error_naming_the_op():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 4)), y: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        return flow.nn.sparse_softmax_cross_entropy_with_logits(y, x.with_distribute(flow.distribute.split(1)),
                                                                name="loss")

    x = np.zeros((2, 4), np.float32)
    np.testing.assert_allclose(job(x, np.array([0, 3], np.int32)), np.log([4.0, 4.0]), rtol=1e-6)
    with pytest.raises(Exception, match=r"label 4 .* out of range for 4 classes") as info:
        job(x, np.array([0, 4], np.int32))
    assert "loss" in str(info.value)


def _build_replay_model(watched: list[np.ndarray]):
    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
                  labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        hidden = flow.layers.dense(images, HIDDEN, activation=flow.nn.relu, name="dense1")
        logits = flow.layers.dense(hidden, CLASSES, name="dense2", model_distribute=flow.distribute.split(0))
        flow.watch_diff(logits, watched.append)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(
            labels, logits.with_distribute(flow.distribute.split(1)), name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=BETA).minimize(loss)
        return loss

    batches = _batches()

    def call(k: int) -> list[np.ndarray]:
        x, y = batches[k % len(batches)]
        return [train_job(x, y)]

    return call


def test_replayed_and_fused_calls_are_the_protocols_bit_for_bit(monkeypatch: pytest.MonkeyPatch):
    """The decomposition's kernels (the _ms ones read their class offset from the task) replay and fuse like any
    other: the proof of tests/replay/test_replay_proof.py on the model-parallel loss over 2 devices."""
    from tests.helpers.replay_proof import assert_replayed_and_fused, assert_same, run

    monkeypatch.setenv("FLOWLAB_THREADS", "0")
    calls = 40
    protocol = run(_build_replay_model, False, calls, monkeypatch, devices=2)
    assert len(flow.default_session().plan.tasks_of_op("train_job", "softmax_loss")) == 2
    replayed = run(_build_replay_model, True, calls, monkeypatch, devices=2)
    assert_replayed_and_fused(replayed, "train", calls)
    assert_same(protocol, replayed)


def test_fewer_classes_than_devices_is_an_error_at_the_users_line():
    from flowlab.compiler.sbp_infer import SbpInferError

    flow.clear_default_session()
    flow.config.cpu_device_num(3)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 2)), y: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> tp.Numpy:
        return flow.nn.sparse_softmax_cross_entropy_with_logits(y, x.with_distribute(flow.distribute.split(1)),
                                                                name="loss")

    with pytest.raises(SbpInferError, match=r"test_model_parallel_loss.py:\d+: op 'loss' "
                                            r"\(sparse_softmax_cross_entropy_ms\) on cpu:0:0-2: blob 'prediction_0' "
                                            r"of shape \(4, 2\) cannot be split on axis 1 over 3 devices"):
        job(np.zeros((4, 2), np.float32), np.zeros(4, np.int32))


@pytest.mark.parametrize("impl", ["reference", "numba"])
@pytest.mark.parametrize("op_type", ["sparse_cross_entropy_ms", "sparse_softmax_cross_entropy_ms_grad"])
def test_the_ms_kernels_check_labels_against_every_class_before_writing(impl, op_type):
    """Device 1 of 2 holds classes 4-6 of 7: label 5 is its column 1, label 2 another device's (0 here), label 7
    is out of range on every device, refused before anything is written."""
    from flowlab.ir import BlobDesc, OpConf
    from flowlab.ir.dtype import float32, int32
    from flowlab.kernels.registry import make_kernel

    prob = np.array([[0.2, 0.3, 0.1], [0.5, 0.25, 0.25]], np.float32)
    ins = {"prediction" if op_type == "sparse_cross_entropy_ms" else "prob": prob}
    grad = op_type != "sparse_cross_entropy_ms"
    descs = [BlobDesc((2, 3), float32), BlobDesc((2,), int32)] + ([BlobDesc((2,), float32)] if grad else [])
    out_desc = BlobDesc((2, 3), float32) if grad else BlobDesc((2,), float32)
    op = OpConf("t", op_type, {arg: (f"{arg}/out",) for arg in (*ins, "label", *(("dy",) if grad else ()))},
                {"dx" if grad else "out": ("t/out_0",)}, {"depth": 7})
    kernel = make_kernel(op, descs, [out_desc], impl, parallel=(1, 2))
    dy = np.array([2.0, 3.0], np.float32)
    out = np.full(out_desc.shape, 9, np.float32)
    kernel([prob, np.array([5, 2], np.int32), *([dy] if grad else [])], [out])
    if grad:
        np.testing.assert_allclose(out, [[0.4, (0.3 - 1) * 2, 0.2], [1.5, 0.75, 0.75]], rtol=1e-6)
    else:
        np.testing.assert_allclose(out, [-np.log(0.3), 0.0], rtol=1e-6)
    out[...] = 9
    with pytest.raises(IndexError, match=r"label 7 \(at flat index 1\) is out of range for 7 classes"):
        kernel([prob, np.array([5, 7], np.int32), *([dy] if grad else [])], [out])
    assert (out == 9).all()


def test_in_the_mirrored_view_tagged_logits_take_the_plain_loss_per_device():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 4)), y: tp.ListNumpy.Placeholder((2,), dtype=flow.int32)) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.nn.sparse_softmax_cross_entropy_with_logits(y, x.with_distribute(flow.distribute.split(1)),
                                                                    name="loss")

    x = np.log(np.array([[1, 1, 1, 1], [1, 2, 3, 4], [4, 3, 2, 1], [2, 2, 2, 2]], np.float32))
    y = np.array([0, 3, 0, 1], np.int32)
    pieces = job([x[:2], x[2:]], [y[:2], y[2:]])
    np.testing.assert_allclose(np.concatenate(pieces), -np.log([1 / 4, 4 / 10, 4 / 10, 1 / 4]), rtol=1e-6)
    assert flow.default_session().job_set.job("job").op("loss").op_type == "sparse_softmax_cross_entropy"
