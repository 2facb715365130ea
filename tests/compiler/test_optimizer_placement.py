"""OneFlow's optimizer placement optimization (OptimizerPlacementOptimizationPass, v0.3.4) on CPU devices.

``distributed_split``: a data-parallel variable lies S(0), its consumers read it B (all-gathered before the
forward), its gradient arrives P -> S(0) (reduce-scattered) and each device updates its half. ``non_distributed``:
each variable and its update on one device, balanced by size. Either way the logical program is the same: the
losses and weights equal the one-device run (1e-5 relative) and an independent NumPy reference.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from tests.helpers.optimizer_placement import (
    ADAM,
    BETA,
    LR,
    B,
    C,
    D,
    H,
    batches,
    compiled,
    config,
    define,
    initial_weights,
    train,
)


def numpy_training(kind: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The same steps in float64 NumPy: forward, the mean-loss gradients, OneFlow's update rules."""
    w = {k: v.astype(np.float64) for k, v in initial_weights().items()}
    state: dict[str, Any] = {}
    losses = []
    for step, (x, y) in enumerate(batches()):
        x = x.astype(np.float64)
        pre = x @ w["hidden-weight"].T + w["hidden-bias"]
        h = np.maximum(pre, 0)
        logits = h @ w["output-weight"].T + w["output-bias"]
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        losses.append(-np.log(p[np.arange(B), y]))
        d = p.copy()
        d[np.arange(B), y] -= 1
        d /= B
        dh = d @ w["output-weight"] * (pre > 0)
        grads = {"hidden-weight": dh.T @ x, "hidden-bias": dh.sum(0), "output-weight": d.T @ h,
                 "output-bias": d.sum(0)}
        for name, g in grads.items():
            if kind == "momentum":  # OneFlow: v = beta v - lr g; w += v
                state[name] = BETA * state.get(name, 0.0) - LR * g
                w[name] = w[name] + state[name]
            else:
                m = ADAM["b1"] * state.get((name, "m"), 0.0) + (1 - ADAM["b1"]) * g
                v = ADAM["b2"] * state.get((name, "v"), 0.0) + (1 - ADAM["b2"]) * g * g
                state[(name, "m")], state[(name, "v")] = m, v
                rate = ADAM["lr"] * math.sqrt(1 - ADAM["b2"] ** (step + 1)) / (1 - ADAM["b1"] ** (step + 1))
                w[name] = w[name] - rate * m / (np.sqrt(v) + ADAM["eps"])
    return np.array(losses), w


@pytest.fixture(scope="module")
def one_device() -> dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]:
    return {kind: train(1, None, kind)[:2] for kind in ("momentum", "adam")}


@pytest.mark.parametrize("kind", ["momentum", "adam"])
@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("mode", ["distributed_split", "non_distributed"])
def test_training_equals_one_device_and_numpy(one_device, mode, devices, kind):
    losses, variables, session = train(devices, mode, kind)
    ref_losses, ref_weights = numpy_training(kind)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    np.testing.assert_allclose(losses, one_device[kind][0], rtol=1e-5)
    assert variables.keys() == one_device[kind][1].keys()
    for name, value in variables.items():
        np.testing.assert_allclose(value, one_device[kind][1][name], rtol=1e-5, atol=1e-7, err_msg=name)
        if name in ref_weights:
            assert np.abs(value - ref_weights[name]).max() <= 1e-5 * np.abs(ref_weights[name]).max(), name
    job = session.job_set.job("train_job")
    for name in ref_weights:  # the pass moved every variable (threshold 1, every dim 0 divides by 2 and 3)
        var = job.op(name)
        if mode == "distributed_split":
            assert str(job.sbp_signatures[name]["out"]) == "S(0)" and var.parallel_conf.parallel_num == devices
            regst = session.plan.tasks_of_op("train_job", name)[0].produced_regst_desc["out"]
            shape = regst.lbi2blob_desc[f"{name}/out"].shape
            assert shape[0] == ref_weights[name].shape[0] // devices  # each device holds its rows only
        else:
            assert var.parallel_conf.parallel_num == 1


def test_the_config_fields_validate_as_oneflow_does():
    cfg = flow.FunctionConfig()
    with pytest.raises(ValueError, match=r"optimizer_placement_optimization_mode takes 'distributed_split' or "
                                         r"'non_distributed'; got 'split'"):
        cfg.optimizer_placement_optimization_mode("split")
    with pytest.raises(TypeError, match=r"optimizer_placement_optimization_mode takes a str; got 1"):
        cfg.optimizer_placement_optimization_mode(1)
    with pytest.raises(ValueError, match=r"threshold takes an element count >= 0; got -1"):
        cfg.optimizer_placement_optimization_threshold(-1)
    assert cfg.get("optimizer_placement_optimization_threshold") == 1024  # OneFlow's default
    cfg.train.optimizer_placement_optimization_mode("non_distributed")  # OneFlow's second name for it
    cfg.train.optimizer_placement_optimization_threshold(64)
    assert cfg.values == {"optimizer_placement_optimization_mode": "non_distributed",
                          "optimizer_placement_optimization_threshold": 64}


def test_distributed_split_rewrites_the_sbp_shown_in_the_job_and_explain_sbp():
    session, job = compiled(2, "distributed_split")
    text = str(job)
    assert "%hidden-weight/out : f32[24,16] = variable()" in text
    line = next(x for x in text.splitlines() if x.startswith("  %hidden-weight/out"))
    assert line.endswith("sbp={out: S(0)}  # optimizer_placement.py:" + line.rpartition(":")[2])
    assert "sbp={a_0: S(0), b_0: B, out_0: S(0)}" in next(x for x in text.splitlines() if "%hidden-matmul" in x)
    update = next(x for x in text.splitlines() if "hidden-weight_optimizer = momentum_update" in x)
    assert "sbp={model_0: S(0), model_diff_0: S(0), momentum_0: S(0), learning_rate_0: B}" in update
    # the variables are chained in the order of their first consumers (OneFlow's ctrl_in_op_name)
    assert job.op("hidden-bias").ctrl_in_op_names == ("hidden-weight",)
    assert job.op("output-weight").ctrl_in_op_names == ("hidden-bias",)
    assert job.op("output-bias").ctrl_in_op_names == ("output-weight",)
    explained = str(flow.debug.explain_sbp(job, "hidden-matmul"))
    assert "hints: b_0: B" in explained and "boxing: b_0: S(0) @cpu:0:0-1 -> B @cpu:0:0-1" in explained
    assert ("b_0: B set by OptimizerPlacementOptimizationPass (distributed_split): 'hidden-weight' is read whole by "
            "its consumers") in explained  # where the hint came from
    explained = flow.debug.explain_sbp(job, "hidden-weight_optimizer")
    assert "model_diff_0: P @cpu:0:0-1 -> S(0) @cpu:0:0-1" in str(explained)
    assert explained.to_dict()["notes"] == [
        "model_diff_0: S(0) as 'hidden-weight' lies (OneFlow's ParallelCast): its gradient is boxed into the update"]
    record = next(r for r in session.passes if r.name == "OptimizerPlacementOptimizationPass")
    assert str(record) == ("OptimizerPlacementOptimizationPass on train_job: "
                           "~[hidden-bias, output-weight, output-bias]")
    assert record.after.sbp_hints["hidden-weight"]["out"] == flow.distribute.split(0)
    assert record.after.sbp_hints["hidden-matmul"]["b_0"] == flow.distribute.broadcast()


def test_which_variables_qualify():
    """distributed_split: dim 0 divisible by the device count and >= threshold x devices elements; the default
    threshold (1024) leaves this small model alone; non_distributed needs only the size."""
    _, job = compiled(3, "distributed_split", threshold=1, hidden=8)  # hidden 8: rows 8 % 3 != 0
    sbp = {name: str(job.sbp_signatures[name]["out"]) for name in initial_weights()}
    assert sbp == {"hidden-weight": "B", "hidden-bias": "B", "output-weight": "S(0)", "output-bias": "S(0)"}
    _, job = compiled(2, "distributed_split", threshold=C * H // 2)  # output-weight: 144 elements = 72 x 2
    sbp = {name: str(job.sbp_signatures[name]["out"]) for name in initial_weights()}
    assert sbp == {"hidden-weight": "S(0)", "hidden-bias": "B", "output-weight": "S(0)", "output-bias": "B"}
    _, job = compiled(2, "distributed_split", threshold=None)
    assert all(str(job.sbp_signatures[name]["out"]) == "B" for name in initial_weights())
    _, job = compiled(2, None)
    assert all(str(job.sbp_signatures[name]["out"]) == "B" for name in initial_weights())


def test_non_distributed_balances_the_variables_over_the_devices_by_size():
    _, job = compiled(2, "non_distributed")
    # by size, largest first, each to the least loaded device: hidden-weight (1536 B) -> 0, output-weight
    # (576 B) -> 1, hidden-bias (96 B) -> 1, output-bias (24 B) -> 1
    where = {name: str(job.op(name).parallel_conf) for name in initial_weights()}
    assert where == {"hidden-weight": "cpu:0:0", "hidden-bias": "cpu:0:1", "output-weight": "cpu:0:1",
                     "output-bias": "cpu:0:1"}
    assert str(job.op("hidden-weight_optimizer").parallel_conf) == "cpu:0:0"
    assert str(job.op("output-weight-momentum").parallel_conf) == "cpu:0:1"
    # chained per device in the order of their first consumers
    assert job.op("output-weight").ctrl_in_op_names == ("hidden-bias",)
    assert job.op("output-bias").ctrl_in_op_names == ("output-weight",)
    assert job.op("hidden-weight").ctrl_in_op_names == ("System-AutoTick-SourceTick",)
    assert str(job.sbp_signatures["hidden-matmul"]["b_0"]) == "B"


@pytest.mark.parametrize("mode", ["distributed_split", "non_distributed"])
def test_a_job_sharing_a_moved_variable_is_an_error_at_the_variable(mode):
    """OneFlow's CheckNonDistributeOptimizerAvailable: jobs share a variable per device, so they must lay it out
    alike; an eval job reading the moved weight as B is refused, naming both jobs and the variable's line."""
    train_job = define(2, mode)

    @flow.global_function()
    def eval_job(images: tp.Numpy.Placeholder((B, D))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            h = flow.layers.dense(images, H, activation=flow.nn.relu, name="hidden")
            return flow.layers.dense(h, C, name="output")

    with pytest.raises(flow.errors.CompileError, match=(
            r"variable 'hidden-weight' \(created at optimizer_placement\.py:\d+\): train job 'train_job' sets "
            rf"optimizer_placement_optimization_mode '{mode}', so the variable lies .* there, but job 'eval_job' "
            r"shares it as B on cpu:0:0-1\. As in OneFlow, the optimization holds only when jobs do not share")):
        train_job(*batches()[0])


def test_a_variable_read_by_a_mirrored_op_stays_whole():
    """A mirrored op takes a consistent blob's pieces as it lies (B: cloned, S(0): split): a variable cast into
    the mirrored view must stay B, so the pass leaves it alone (test_logical_view_cast's program, with the mode)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    cfg = config("distributed_split")
    cfg.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=cfg)
    def train_job(x: tp.ListNumpy.Placeholder((2, 4))) -> tp.ListNumpy:
        v = flow.cast_to_current_logical_view(flow.get_variable("v", shape=(4,), initializer=flow.zeros_initializer()))
        loss = flow.math.square(x + v)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(loss)
        return loss

    x = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    pieces = train_job([x[:2], x[2:]])
    np.testing.assert_allclose(np.concatenate(pieces), x ** 2, rtol=1e-6)
    # the dynamic (ListNumpy) loss's instances are its rows (OneFlow's ScaleModelDiffByDynamicLossInstanceNum)
    np.testing.assert_allclose(flow.get_all_variables()["v"], -0.5 * 2 * x.sum(0) / len(x), rtol=1e-5)
    assert str(flow.default_session().job_set.job("train_job").sbp_signatures["v"]["out"]) == "B"
