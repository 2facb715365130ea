"""A consistent blob read by a mirrored op in a train job: OneFlow's auto-converted DistributeSplit (S(0)) or
DistributeClone (B) (``JobBuildAndInferCtx::FindOrCreateMirroredLbiFromCompatibleConsistentBlob``), whose gradient
is a DistributeConcat (DistributeAdd) of each device's own gradient piece (``job_rewriter/distribute_grad.cpp``).

A split variable read by a mirrored matmul gets, on each device, the gradient of its own rows, which lies P in
flowlab's SBP (a contraction over the device's batch); the concat joins those pieces into the variable's S(0)
gradient as OneFlow's DistributeConcat joins its sub-blobs (it failed to compile before: "pieces lie P")."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

BATCH, IN, K, STEPS, LR = 2, 4, 6, 3, 0.1


def _init() -> np.ndarray:
    return (np.arange(K * IN, dtype=np.float32).reshape(K, IN) - 11.0) / 20.0


def _xs(devices: int, seed: int, same: bool = False) -> list[list[np.ndarray]]:
    """Per step, one (BATCH, IN) batch per device (the same one on every device where ``same``)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(STEPS):
        one = rng.standard_normal((BATCH, IN)).astype(np.float32)
        out.append([one if same or i == 0 else rng.standard_normal((BATCH, IN)).astype(np.float32)
                    for i in range(devices)])
    return out


def _define(devices: int, kind: str, scale: float | None, train: bool, momentum: float = 0.0):
    """Per device: h = x_i @ c.T, with c = w (scale None: the variable itself) or c = scale * w computed in the
    consistent view; w lies S(0) (kind "split") or B ("clone"); a train job's loss is h * h per element."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())
    distribute = flow.distribute.split(0) if kind == "split" else flow.distribute.broadcast()

    def body(x):
        w = flow.get_variable("w", shape=(K, IN), initializer=flow.zeros_initializer(), distribute=distribute)
        if scale is not None:
            with flow.scope.consistent_view():
                w = w * scale
        return flow.matmul(x, w, transpose_b=True)

    if train:
        @flow.global_function(type="train", function_config=config)
        def job(x: tp.ListNumpy.Placeholder((BATCH, IN))) -> tp.ListNumpy:
            h = body(x)
            loss = h * h
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=momentum).minimize(loss)
            return loss
    else:
        @flow.global_function(function_config=config)
        def job(x: tp.ListNumpy.Placeholder((BATCH, IN))) -> tp.ListNumpy:
            return body(x)

    flow.load_variables({"w": _init()})
    return job


def _numpy(steps: list[list[np.ndarray]], kind: str, scale: float | None, train: bool, momentum: float = 0.0
           ) -> tuple[list[list[np.ndarray]], np.ndarray]:
    """Device i reads rows i of c = scale * w (split) or all of c (clone); the loss count is every device's rows
    (the loss is dynamic: OneFlow's ScaleModelDiffByDynamicLossInstanceNum counts axis 0, summed over the devices);
    OneFlow's momentum: v = beta v - lr g, w += v."""
    w, vel, s = _init(), np.zeros((K, IN), np.float32), 1.0 if scale is None else scale
    results = []
    for xs in steps:
        n = len(xs)
        rows = K // n if kind == "split" else K
        c, grad, count, outs = s * w, np.zeros_like(w), n * BATCH, []
        for i, x in enumerate(xs):
            sl = slice(i * rows, (i + 1) * rows) if kind == "split" else slice(None)
            h = x @ c[sl].T
            outs.append(h * h if train else h)
            grad[sl] += s * (2.0 * h / count).T @ x
        results.append(outs)
        if train:
            vel = momentum * vel - LR * grad
            w = w + vel
    return results, w


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_a_split_variable_read_by_a_mirrored_matmul_trains_as_numpy_and_as_one_device(devices, momentum):
    steps = _xs(devices, seed=devices)
    want, want_w = _numpy(steps, "split", None, True, momentum)
    job = _define(devices, "split", None, True, momentum)
    for xs, outs in zip(steps, want):
        got = job(xs)
        for g, o in zip(got, outs):
            np.testing.assert_allclose(g, o, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(flow.get_all_variables()["w"], want_w, rtol=1e-5, atol=1e-7)
    user = flow.default_session().job_set.job("job")
    (split_op,) = [op for op in user.ops if op.op_type == "distribute_split"]
    grad = user.op(f"{split_op.name}_grad")
    assert grad.op_type == "distribute_concat" and grad.name not in user.mirrored_op_names
    # each device's own gradient of its rows (a matmul over its batch: P) joined into the variable's S(0) gradient
    assert str(user.sbp_signatures[grad.name]) == "{in: P, out: S(0)}"
    assert user.blob_descs[grad.output_lbns[0]].shape == (K, IN)
    # (The same batch on every device is not the one-device run on it: the dynamic loss's instance count sums the
    # devices' rows, OneFlow's ScaleModelDiffByDynamicLossInstanceNum, so each device's gradient is divided by n
    # times the batch; _numpy above follows that.)


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("kind", ["split", "clone"])
@pytest.mark.parametrize("scale", [None, 2.0], ids=["variable", "consistent_op"])
@pytest.mark.parametrize("train", [False, True], ids=["predict", "train"])
def test_every_conversion_of_a_consistent_input_compiles_and_matches_numpy(devices, kind, scale, train):
    """{DistributeSplit, DistributeClone} x {a variable, a consistent op's output} x {predict, train}."""
    steps = _xs(devices, seed=11)
    want, want_w = _numpy(steps, kind, scale, train, momentum=0.9 if train else 0.0)
    job = _define(devices, kind, scale, train, momentum=0.9)
    for xs, outs in zip(steps, want):
        for g, o in zip(job(xs), outs):
            np.testing.assert_allclose(g, o, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(flow.get_all_variables()["w"], want_w, rtol=1e-5, atol=1e-7)
    user = flow.default_session().job_set.job("job")
    (conv,) = [op for op in user.ops if op.op_type == f"distribute_{kind}"]
    assert conv.attrs["is_variable_ref"] is (scale is None)
    assert (conv.input_lbns == ("w/out",)) is (scale is None)
