"""The Plan's structure: system jobs, shared interface memory, reuse inside a job, the verifier."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler import check_plan
from flowlab.errors import CompileError

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)


def compile_two_jobs():
    @flow.global_function()
    def zero_pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        flow.reflection_pad2d(x, padding=1)
        return flow.zero_pad2d(x, padding=2)

    @flow.global_function()
    def reflection_pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    zero_pad_Job(X)
    return flow.default_session()


def block_of(plan, job_name, op_name):
    task = next(t for t in plan.tasks_of_job(job_name) if t.name == op_name)
    return task.produced_regst_desc["out"].mem_block_id


def test_system_jobs_exist_in_oneflow_order():
    session = compile_two_jobs()
    assert [(j.name, j.kind) for j in session.job_set] == [
        ("zero_pad_Job", "user"),
        ("reflection_pad_Job", "user"),
        ("System-Push-Input_0", "push"),
        ("System-Pull-Return_0", "pull"),
        ("System-Push-Input_1", "push"),
        ("System-Pull-Return_1", "pull"),
        ("System-Main", "main"),
    ]
    push = session.job_set.job("System-Push-Input_0")
    assert [op.op_type for op in push.ops] == ["source_tick", "foreign_input", "output", "sink_tick"]
    assert push.op("Input_0").op_type == "output"  # named exactly like the user job's input op
    pull = session.job_set.job("System-Pull-Return_1")
    assert pull.op("Return_1").op_type == "input"
    main = session.job_set.job("System-Main")
    assert [op.op_type for op in main.ops] == [
        "wait_and_send_ids", "reentrant_lock", "case", "tick", "tick", "tick", "tick", "tick", "tick", "esac",
        "callback_notify",
    ]
    assert main.op("System-Main-WaitAndSendIds_0").attrs["id_list"] == tuple((i,) for i in range(6))


def test_interface_blobs_share_one_memory_block_across_jobs():
    plan = compile_two_jobs().plan
    assert block_of(plan, "zero_pad_Job", "Input_0") == block_of(plan, "System-Push-Input_0", "Input_0")
    assert block_of(plan, "zero_pad_Job", "Return_0") == block_of(plan, "System-Pull-Return_0", "Return_0")
    assert block_of(plan, "zero_pad_Job", "Input_0") != block_of(plan, "reflection_pad_Job", "Input_1")
    shared = plan.mem_block(block_of(plan, "zero_pad_Job", "Input_0"))
    assert not shared.enable_reuse_mem and shared.job_ids == (0, 2)
    sections = {cs.job_id: set(cs.mem_block_ids) for cs in plan.critical_sections}
    assert sections[0] & sections[2] and sections[0] & sections[3]  # user job intersects its push and pull
    assert not sections[0] & sections[1]  # the two user jobs share nothing


def test_memory_is_reused_inside_a_job_when_lifetimes_do_not_overlap():
    @flow.global_function()
    def chain(x: tp.Numpy.Placeholder((1, 1, 8, 8))) -> tp.Numpy:
        a = flow.zero_pad2d(x, padding=3)  # 14x14 = 784 B, dead once b is computed
        b = flow.zero_pad2d(a, padding=1)  # 16x16 = 1024 B, live until the return op copies it
        flow.zero_pad2d(x, padding=1)  # 10x10 = 400 B, made after a died: fits in a's bytes
        return b

    x = np.random.default_rng(0).standard_normal((1, 1, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(chain(x), np.pad(x, ((0, 0), (0, 0), (4, 4), (4, 4))))
    plan = flow.default_session().plan
    regsts = {t.name: t.produced_regst_desc["out"] for t in plan.tasks_of_job("chain")
              if t.task_type == "NormalForward"}
    a, b, c = (regsts[f"zero_pad2d_{i}"] for i in range(3))
    assert a.mem_block_id == b.mem_block_id == c.mem_block_id
    assert plan.mem_block(a.mem_block_id).enable_reuse_mem
    assert (a.regst_size, b.regst_size, c.regst_size) == (832, 1024, 448)  # 64-byte aligned
    assert c.mem_block_offset == a.mem_block_offset == 0  # a is dead when c is written
    assert b.mem_block_offset == 832
    assert plan.mem_block(a.mem_block_id).mem_size == 832 + 1024  # not 832 + 1024 + 448


def test_reuse_off_gives_each_register_its_own_block():
    config = flow.FunctionConfig()
    config.enable_reuse_mem(False)

    @flow.global_function(function_config=config)
    def chain(x: tp.Numpy.Placeholder((1, 1, 4, 4))) -> tp.Numpy:
        return flow.zero_pad2d(flow.zero_pad2d(x, padding=1), padding=1)

    chain(np.ones((1, 1, 4, 4), np.float32))
    plan = flow.default_session().plan
    blocks = [t.produced_regst_desc["out"].mem_block_id for t in plan.tasks_of_job("chain")
              if t.name.startswith("zero_pad2d")]
    assert len(set(blocks)) == 2 and not any(plan.mem_block(b).enable_reuse_mem for b in blocks)


def test_task_fields_follow_oneflow():
    plan = compile_two_jobs().plan
    from flowlab.ir import decode_task_id

    for task in plan.tasks:
        machine, thrd, _stream, _index = decode_task_id(task.task_id)
        assert (machine, thrd) == (task.machine_id, task.thrd_id)
    compute = [t for t in plan.tasks if t.task_type == "NormalForward"]
    assert {t.thrd_id for t in compute} == {0}
    # OneFlow's IDMgr with one CPU device: device thread 0, CommNet 1, one TickTock thread 2 for every tick-like
    # task, then one independent thread per other task type (thrd_id_generator.cpp)
    tick_tock = {t.thrd_id for t in plan.tasks if t.task_type in ("Tick", "Case", "Esac", "ReentrantLock")}
    assert tick_tock == {2}
    independent = {}
    for t in plan.tasks:
        if t.task_type in ("WaitAndSendIds", "ForeignInput", "ForeignOutput", "CallbackNotify"):
            independent.setdefault(t.task_type, set()).add(t.thrd_id)
    assert all(len(ids) == 1 for ids in independent.values())  # at most one thread per type and machine
    assert sorted(i for ids in independent.values() for i in ids) == [3, 4, 5, 6]
    wait = next(t for t in plan.tasks if t.task_type == "WaitAndSendIds")
    assert wait.produced_regst_desc["out"].register_num == 100
    user_chain = {t.chain_id for t in plan.tasks_of_job("zero_pad_Job") if t.task_type == "NormalForward"}
    assert len(user_chain) == 1


def test_verifier_catches_broken_plans():
    @flow.global_function()
    def chain(x: tp.Numpy.Placeholder((1, 1, 2, 2))) -> tp.Numpy:
        return flow.zero_pad2d(flow.zero_pad2d(x, padding=1), padding=1)

    chain(np.zeros((1, 1, 2, 2), np.float32))
    plan = flow.default_session().plan
    check_plan(plan)
    tasks = list(plan.tasks)
    # zero_pad2d_1 reads zero_pad2d_0 while writing: putting both in the same bytes must be rejected.
    i = next(k for k, t in enumerate(tasks) if t.name == "zero_pad2d_1")
    j = next(k for k, t in enumerate(tasks) if t.name == "zero_pad2d_0")
    target = tasks[j].produced_regst_desc["out"]
    moved = dataclasses.replace(tasks[i].produced_regst_desc["out"], mem_block_offset=target.mem_block_offset)
    tasks[i] = dataclasses.replace(tasks[i], produced_regst_desc={"out": moved})
    with pytest.raises(CompileError, match="share bytes of block .* while both are live"):
        check_plan(dataclasses.replace(plan, tasks=tuple(tasks)))
    tasks = list(plan.tasks)
    tasks.append(dataclasses.replace(tasks[0], task_id=tasks[0].task_id + 999))
    with pytest.raises(CompileError, match="two producers"):
        check_plan(dataclasses.replace(plan, tasks=tuple(tasks)))


def test_interface_blob_mismatch_across_jobs_is_a_clear_error():
    @flow.global_function()
    def b(x: tp.Numpy.Placeholder((1, 1, 2, 2))) -> tp.Numpy:
        flow.get_variable("shared", shape=(3,))
        return flow.zero_pad2d(x, padding=1)

    @flow.global_function()
    def c(x: tp.Numpy.Placeholder((1, 1, 2, 2))) -> tp.Numpy:
        flow.get_variable("shared", shape=(4,))
        return flow.zero_pad2d(x, padding=1)

    with pytest.raises(CompileError, match=r"interface blob 'shared' differs between jobs: f32\[3\].*f32\[4\]"):
        b(np.zeros((1, 1, 2, 2), np.float32))
    assert flow.default_session().status.value == "OPEN"


def test_same_named_variable_in_two_jobs_is_one_variable():
    @flow.global_function()
    def reader(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.get_variable("w", shape=(3,), initializer={"type": "constant", "value": 2.0}) + x

    @flow.global_function()
    def other(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.get_variable("w", shape=(3,)) * x

    reader(np.zeros(3, np.float32))
    plan = flow.default_session().plan
    assert block_of(plan, "reader", "w") == block_of(plan, "other", "w") == block_of(plan, "System-ModelInit", "w")
    assert {j.name for j in flow.default_session().job_set.of_kind("model_io")} == {
        "System-ModelInit", "System-ModelLoad", "System-ModelSave"}
