"""flow.debug.diff: two compilations compared by what their tasks, registers and blocks are, not by id."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp


def _plan(batch: int = 2, reuse: bool = True, activation: str = "relu"):
    flow.clear_default_session()
    config = flow.FunctionConfig()
    config.enable_reuse_mem(reuse)

    @flow.global_function(function_config=config)
    def mlp(x: tp.Numpy.Placeholder((batch, 4))) -> tp.Numpy:
        h = flow.layers.dense(x, 3, activation=getattr(flow.nn, activation), name="fc1")
        return flow.layers.dense(h, 2, name="fc2")

    mlp(np.zeros((batch, 4), np.float32))
    return flow.default_session().plan


def _ids(plan, job, op):
    task = next(t for t in plan.tasks if t.name == op and plan.job_names[t.job_id] == job)
    return task.task_id, task.produced_regst_desc["out"]


def test_the_same_program_compiled_twice_has_no_diff():
    d = flow.debug.diff(_plan(), _plan())
    assert d.empty and str(d) == "plan diff: the plans are the same" and d.marks_a == d.marks_b == {}


def test_a_changed_op_is_one_changed_task_pinned_print():
    a, b = _plan(), _plan(activation="sigmoid")
    d = flow.debug.diff(a, b)
    assert str(d) == ("tasks: 0 added, 0 removed, 1 changed\n"
                      "  ~ mlp/fc1-activation: op_type: relu -> sigmoid\n"
                      "registers: 0 added, 0 removed, 0 changed\n"
                      "memory blocks: 0 added, 0 removed, 0 changed\n"
                      f"memory: {sum(m.mem_size for m in a.mem_blocks):,} B -> "
                      f"{sum(m.mem_size for m in b.mem_blocks):,} B")
    task_a, _ = _ids(a, "mlp", "fc1-activation")
    task_b, _ = _ids(b, "mlp", "fc1-activation")
    assert d.marks_a == {f"t:{task_a}": "changed"} and d.marks_b == {f"t:{task_b}": "changed"}


def test_memory_reuse_off_splits_the_shared_block():
    a, b = _plan(), _plan(reuse=False)
    d = flow.debug.diff(a, b)
    assert d.counts("task") == {"added": 0, "removed": 0, "changed": 0}
    reused = [m for m in a.mem_blocks if m.enable_reuse_mem]
    tenants = [r for t in a.tasks for r in t.produced_regst_desc.values() if r.mem_block_id == reused[0].mem_block_id]
    assert len(reused) == 1 and len(tenants) == 5
    # the reused block is gone, each of its 5 registers gets a block of its own and moves there
    assert d.counts("block") == {"added": 5, "removed": 1, "changed": 0}
    assert d.counts("register") == {"added": 0, "removed": 0, "changed": 5}
    assert d.marks_a[f"b:{reused[0].mem_block_id}"] == "removed"
    assert {k for k, v in d.marks_a.items() if k.startswith("r:")} == {f"r:{r.regst_desc_id}" for r in tenants}
    assert sum(v == "added" for k, v in d.marks_b.items() if k.startswith("b:")) == 5
    assert "  - block of mlp/fc1-activation out (+4 more): size 128 B" in str(d)
    assert "  ~ mlp/fc1-matmul out: place: block of 5 registers +0 -> block of 1 registers +0" in str(d)


def test_a_batch_size_change_changes_shapes_and_sizes():
    a, b = _plan(batch=2), _plan(batch=5)
    d = flow.debug.diff(a, b)
    changed = {c.label: c for c in d.tasks}
    assert set(changed) >= {"mlp/fc1-matmul", "mlp/Input_0", "System-Push-Input_0/Input_0"}
    assert all(c.status == "changed" for c in d.tasks) and not any(c.label.endswith("fc1-weight") for c in d.tasks)
    assert changed["mlp/fc1-matmul"].fields == {
        "produces out": ("fc1-matmul/out_0:f32[2,3]", "fc1-matmul/out_0:f32[5,3]")}
    assert changed["mlp/Input_0"].fields["attr shape"] == ("(2, 4)", "(5, 4)")
    _, push_a = _ids(a, "System-Push-Input_0", "Input_0")
    _, push_b = _ids(b, "System-Push-Input_0", "Input_0")
    assert push_a.regst_size < push_b.regst_size
    (block,) = [c for c in d.blocks if "System-Push-Input_0/Input_0 out" in c.label]
    assert block.status == "changed"
    assert block.fields["size"] == (f"{push_a.regst_size:,} B", f"{push_b.regst_size:,} B")


def test_diff_takes_plans():
    with pytest.raises(TypeError, match="flow.debug.diff compares two Plans .*plan_b is str"):
        flow.debug.diff(_plan(), "plan")
