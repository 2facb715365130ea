"""A mirrored op reading a consistent B blob (a variable) reads it through OneFlow's auto-converted DistributeClone
(``JobBuildAndInferCtx::FindOrCreateMirroredLbiFromCompatibleConsistentBlob``: B -> op
``System-Mirrored-Blob-Auto-Converted-From-Consistent-Blob-DistributeClone-<id>``, one per blob, ``{in: B, out: B}``),
whose gradient is a DistributeAdd (``<clone>_grad``, output P, ``job_rewriter/distribute_grad.cpp``) summing each
device's own gradient, with a DistributeSplit / DistributeConcat task per device in the Plan."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler.mirrored_split import CLONE_PREFIX

ROWS, IN, OUT, STEPS, LR = 6, 4, 3, 3, 0.1


def _sgd(loss, momentum: float = 0.0) -> None:
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=momentum).minimize(loss)


def _batches(seed: int = 4) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((ROWS, IN)).astype(np.float32) for _ in range(STEPS)]


def _mirrored_train(devices: int, momentum: float = 0.0):
    """Per device: h = x_i @ w.T + b, g = (x_i / 2) @ w.T + b, loss = sum(h * g) per row: w and b each read by two
    mirrored ops, whose gradients (P) add before the clone's DistributeAdd."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())
    per = ROWS // devices

    @flow.global_function(type="train", function_config=config)
    def train(x: tp.ListNumpy.Placeholder((per, IN))) -> tp.ListNumpy:
        w = flow.get_variable("w", shape=(OUT, IN), initializer=flow.constant_initializer(0.1))
        b = flow.get_variable("b", shape=(OUT,), initializer=flow.constant_initializer(0.2))
        h = flow.nn.bias_add(flow.matmul(x, w, transpose_b=True), b)
        g = flow.nn.bias_add(flow.matmul(x * 0.5, w, transpose_b=True), b)
        loss = flow.math.reduce_sum(h * g, axis=1)
        _sgd(loss, momentum)
        return loss

    return train, per


def _numpy_steps(batches: list[np.ndarray], momentum: float = 0.0) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """One-device SGD (OneFlow's momentum: v = beta v - lr g; w += v) on the whole batch; the loss count is one
    element per row, over every device."""
    w, b = np.full((OUT, IN), 0.1, np.float32), np.full((OUT,), 0.2, np.float32)
    vw, vb = np.zeros_like(w), np.zeros_like(b)
    losses = []
    for x in batches:
        h, g = x @ w.T + b, (x * 0.5) @ w.T + b
        losses.append((h * g).sum(axis=1))
        dh, dg = g / ROWS, h / ROWS
        vw = momentum * vw - LR * (dh.T @ x + dg.T @ (x * 0.5))
        vb = momentum * vb - LR * (dh.sum(axis=0) + dg.sum(axis=0))
        w, b = w + vw, b + vb
    return losses, w, b


@pytest.mark.parametrize("devices", [2, 3])
def test_the_clone_is_inserted_once_per_blob_with_oneflows_signature_and_gradient(devices):
    train, per = _mirrored_train(devices)
    train(list(np.split(_batches()[0], devices)))
    user = flow.default_session().job_set.job("train")
    clones = {op.input_lbns[0]: op for op in user.ops if op.op_type == "distribute_clone"}
    assert sorted(clones) == ["b/out", "w/out"]  # one per blob, though b is read by two mirrored ops
    assert sorted(op.name for op in clones.values()) == [f"{CLONE_PREFIX}0", f"{CLONE_PREFIX}1"]
    for lbn, clone in clones.items():
        assert str(user.sbp_signatures[clone.name]) == "{in: B, out: B}"
        assert clone.parallel_conf.parallel_num == devices and clone.attrs["mirrored"]
        assert user.blob_descs[clone.output_lbns[0]] == user.blob_descs[lbn]  # the whole blob on each device
        assert f"distribute_clone(%{lbn})" in str(user)
        readers = [op for op in user.ops if clone.output_lbns[0] in op.input_lbns]
        assert readers and all(op.name in user.mirrored_op_names for op in readers)
        # no mirrored op reads the variable itself any more: only the clone and the optimizer's update do
        assert all(op.name not in user.mirrored_op_names or op is clone
                   for op in user.ops if lbn in op.input_lbns)
        (grad,) = [op for op in user.ops if op.name == f"{clone.name}_grad"]
        # per device, as flowlab writes a DistributeClone's: each device's piece of the gradient is its own
        assert grad.op_type == "distribute_add" and grad.name in user.mirrored_op_names
        assert str(user.sbp_signatures[grad.name]) == "{in: P, out: P}"
    w_clone = clones["w/out"]
    assert user.blob_descs[w_clone.output_lbns[0]].shape == (OUT, IN)
    matmul = next(op for op in user.ops if op.op_type == "matmul" and op.name in user.mirrored_op_names)
    assert w_clone.output_lbns[0] in matmul.input_lbns
    explained = str(flow.debug.explain_sbp(user, w_clone.name))
    assert "{in: B, out: B}" in explained
    plan = flow.default_session().plan
    tasks = plan.tasks_of_op("train", w_clone.name)
    assert len(tasks) == devices and {t.task_type for t in tasks} == {"DistributeSplit"}
    assert sorted(t.parallel_id for t in tasks) == list(range(devices))
    grad_tasks = plan.tasks_of_op("train", f"{w_clone.name}_grad")
    assert len(grad_tasks) == devices and {t.task_type for t in grad_tasks} == {"DistributeConcat"}


@pytest.mark.parametrize("devices", [1, 2, 3])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_mirrored_training_through_the_clone_is_one_device_sgd_on_the_whole_batch(devices, momentum):
    batches = _batches()
    want_losses, want_w, want_b = _numpy_steps(batches, momentum)
    train, _per = _mirrored_train(devices, momentum)
    for x, want in zip(batches, want_losses):
        pieces = train(list(np.split(x, devices)))
        assert len(pieces) == devices
        np.testing.assert_allclose(np.concatenate(pieces), want, rtol=1e-5)
    variables = flow.get_all_variables()
    np.testing.assert_allclose(variables["w"], want_w, rtol=1e-5)
    np.testing.assert_allclose(variables["b"], want_b, rtol=1e-5)
    user = flow.default_session().job_set.job("train")
    clones = [op for op in user.ops if op.op_type == "distribute_clone"]
    # one device: OneFlow's blobs there are all S(0), so nothing is cloned (nor split, compiler/mirrored_split.py)
    assert len(clones) == (0 if devices == 1 else 2)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_predict_job_clones_a_consistent_b_blob_and_a_return_gives_it_per_device(devices):
    """Forward only: a consistent op of a variable (B) read by mirrored ops; the clone is the same blob on each
    device and a mirrored ListNumpy return of it is one whole copy per device."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> tuple[tp.ListNumpy, tp.ListNumpy]:
        v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(1.5))
        twice = v * 2.0  # consistent, B
        with flow.scope.mirrored_view():
            return x + twice, flow.cast_to_current_logical_view(twice)

    xs = [np.arange(6, dtype=np.float32).reshape(2, 3) + i for i in range(devices)]
    sums, copies = job(xs)
    for got, x in zip(sums, xs):
        np.testing.assert_array_equal(got, x + 3.0)
    assert len(copies) == devices
    for got in copies:
        np.testing.assert_array_equal(got, np.full(3, 3.0, np.float32))
    user = flow.default_session().job_set.job("job")
    (clone,) = [op for op in user.ops if op.op_type == "distribute_clone"]
    assert clone.input_lbns == ("scalar_mul_0/y_0",)
    assert clone.name == f"{CLONE_PREFIX}0"
    assert sum(clone.output_lbns[0] in op.input_lbns for op in user.ops) == 2


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("per_row", [False, True])
def test_a_penalty_on_the_weights_in_a_mirrored_loss_trains_as_one_device(devices, per_row):
    """loss_i = data term + 0.01 * sum(w * w) on each device: w's gradient there is its batch's part (P) plus the
    penalty's, each device's own (per-device pieces), added per device and summed over the devices by the clone's
    DistributeAdd, as OneFlow's sub-ops and DistributeAdd do; the loss count is over every device: one-device SGD."""

    def define(n: int):
        flow.clear_default_session()
        flow.config.cpu_device_num(n)
        config = flow.function_config()
        config.default_logical_view(flow.scope.mirrored_view())

        @flow.global_function(type="train", function_config=config)
        def train(x: tp.ListNumpy.Placeholder((ROWS // n, IN))) -> tp.ListNumpy:
            w = flow.get_variable("w", shape=(OUT, IN), initializer=flow.constant_initializer(0.1))
            h = flow.matmul(x, w, transpose_b=True)
            data = flow.math.reduce_sum(h * h, axis=1) if per_row else flow.math.reduce_mean(h * h)
            loss = data + 0.01 * flow.math.reduce_sum(w * w)
            _sgd(loss)
            return loss

        return train

    batches = _batches(6)
    w = np.full((OUT, IN), 0.1, np.float32)
    for x in batches:  # NumPy: one device, the whole batch
        h = x @ w.T
        dh = 2 * h / ROWS if per_row else 2 * h / h.size
        w = w - LR * (dh.T @ x + 0.02 * w)
    results = {}
    for n in (1, devices):
        train = define(n)
        results[n] = [np.concatenate(train(list(np.split(x, n)))) for x in batches]
        np.testing.assert_allclose(flow.get_all_variables()["w"], w, rtol=1e-5, err_msg=f"{n} device(s)")
    if per_row:
        for one, many in zip(results[1], results[devices]):
            np.testing.assert_allclose(many, one, rtol=1e-5)
    user = flow.default_session().job_set.job("train")
    (add,) = [op for op in user.ops if op.op_type == "distribute_add"]
    assert str(user.sbp_signatures[add.name]) == "{in: S(0), out: P}"  # each device's own gradient, summed
