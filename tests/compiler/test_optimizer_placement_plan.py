"""distributed_split in the Plan: an all-gather (slice-boxing copies) before the forward, a reduce-scatter (adds
only) before each update, each device holding and updating its rows; checkpoints hold the whole logical variable;
the per-thread lanes replay it bit for bit with the protocol."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import flowlab as flow
from tests.helpers.lanes import lane_schedules, lanes_run
from tests.helpers.optimizer_placement import C, D, H, batches, compiled, define, initial_weights
from tests.helpers.optimizer_placement_plan import build_split
from tests.helpers.replay_models import MODELS
from tests.helpers.replay_proof import assert_same


def producers(plan: object) -> dict[int, object]:
    return {r.regst_desc_id: t for t in plan.tasks for r in t.produced_regst_desc.values()}  # type: ignore[attr-defined]


def boxing_upstream(plan: object, regst_id: int) -> list[object]:
    """The boxing tasks a register passes through on its way from its producing op: the whole sub-graph."""
    by_id, out, todo = producers(plan), [], [regst_id]
    while todo:
        task = by_id[todo.pop()]
        if task.is_boxing and task not in out:
            out.append(task)
            todo.extend(i for name, ids in task.consumed_regst_desc_id.items() if name != "in_ctrl" for i in ids)
    return out


def boxing_into(plan: object, op: str, position: int) -> tuple[list[str], list[tuple[int, ...]]]:
    """(kinds, out shapes) of the boxing tasks feeding input ``position`` of ``op``'s tasks, sorted."""
    tasks = []
    for task in plan.tasks_of_op("train_job", op):  # type: ignore[attr-defined]
        tasks += [t for t in boxing_upstream(plan, task.consumed_regst_desc_id["in"][position]) if t not in tasks]
    kinds = sorted(t.name.split("-")[2] for t in tasks)
    shapes = sorted(next(iter(t.produced_regst_desc["out"].lbi2blob_desc.values())).shape for t in tasks)
    return kinds, shapes


@pytest.mark.parametrize("devices", [2, 3])
def test_an_all_gather_before_the_forward_and_a_reduce_scatter_before_the_update(devices):
    session, _ = compiled(devices, "distributed_split")
    plan = session.plan
    rows = H // devices
    weights = plan.tasks_of_op("train_job", "hidden-weight")
    shapes = [t.produced_regst_desc["out"].lbi2blob_desc["hidden-weight/out"].shape for t in weights]
    assert shapes == [(rows, D)] * devices
    # forward: each device gathers every device's rows (copies only, whole blob out)
    assert boxing_into(plan, "hidden-matmul", 1) == (["BoxingCopy"] * devices, [(H, D)] * devices)
    # before the update: each device adds only its rows of the devices' partial sums (no copy back to B)
    assert boxing_into(plan, "hidden-weight_optimizer", 1) == (["BoxingAdd"] * devices, [(rows, D)] * devices)
    assert boxing_into(plan, "hidden-weight_optimizer", 0) == ([], [])  # the model: its own rows, read in place
    for task in plan.tasks_of_op("train_job", "hidden-weight_optimizer"):  # and so are its momentum rows
        assert task.parallel_num == devices


def test_without_it_the_update_gets_the_whole_reduced_gradient_on_every_device():
    session, _ = compiled(2, None)
    kinds, shapes = boxing_into(session.plan, "hidden-weight_optimizer", 1)
    assert kinds == ["BoxingAdd", "BoxingAdd", "BoxingCopy", "BoxingCopy"]  # reduce-scatter, then all-gather
    assert boxing_into(session.plan, "hidden-matmul", 1) == ([], [])  # the B variable is read in place


def test_non_distributed_reads_each_variable_from_its_one_device():
    session, job = compiled(2, "non_distributed")
    plan = session.plan
    (weight,) = plan.tasks_of_op("train_job", "hidden-weight")
    assert (weight.parallel_id, weight.parallel_num) == (0, 1)
    (update,) = plan.tasks_of_op("train_job", "hidden-weight_optimizer")
    assert update.parallel_num == 1 and str(job.op("hidden-weight_optimizer").parallel_conf) == "cpu:0:0"
    # one device's whole weight copied to each device's matmul; both devices' partial sums added on device 0 only
    assert boxing_into(plan, "hidden-matmul", 1) == (["BoxingCopy"] * 2, [(H, D)] * 2)
    assert boxing_into(plan, "hidden-weight_optimizer", 1) == (["BoxingAdd"], [(H, D)])


def test_the_checkpoint_holds_the_whole_logical_variable(tmp_path: Path):
    job = define(2, "distributed_split")
    flow.load_variables(initial_weights())
    for x, y in batches()[:2]:
        job(x, y)
    trained = flow.get_all_variables()
    flow.checkpoint.save(tmp_path / "ckpt")
    for name, shape in (("hidden-weight", (H, D)), ("output-weight", (C, H)), ("hidden-weight-momentum", (H, D))):
        raw = np.fromfile(tmp_path / "ckpt" / name / "out", dtype="<f4").reshape(shape)
        np.testing.assert_array_equal(raw, trained[name])
    # a one-device session of the same program loads it whole, and so does the split one
    define(1, None)
    flow.checkpoint.load(tmp_path / "ckpt")
    for name, value in flow.get_all_variables().items():
        np.testing.assert_array_equal(value, trained[name], err_msg=name)
    define(3, "distributed_split")
    flow.checkpoint.load(tmp_path / "ckpt")
    for name, value in flow.get_all_variables().items():
        np.testing.assert_array_equal(value, trained[name], err_msg=name)


@pytest.fixture(autouse=False)
def fuse_early(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("flowlab.replay.layer.FUSE_AFTER", 3)


@pytest.mark.parametrize("devices", [2, 3])
def test_lanes_replay_distributed_split_bit_for_bit(devices, monkeypatch, fuse_early):
    monkeypatch.setitem(MODELS, "mlp_distributed_split", build_split)
    protocol, replayed = lanes_run("mlp_distributed_split", devices, monkeypatch)
    job = flow.default_session().job_set.job("train_job")
    assert str(job.sbp_signatures["hidden-weight"]["out"]) == "S(0)"
    train = [s for s in lane_schedules(replayed["layer"]) if any("train" in n for n in s.key)]
    assert train and all(len(s.lanes.lanes) == devices for s in train)
    assert any(s.lanes.segment_of for s in train)  # the lanes fused
    assert_same(protocol, replayed)
