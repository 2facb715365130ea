"""OneFlow's ``is_variable_ref``: the DistributeClone (DistributeSplit) AutoDistributeSplit puts before a mirrored op
reading a variable is marked ``is_variable_ref`` (job_build_and_infer_ctx.cpp), and each device's output register is
the variable's own memory (``force_inplace_consumed_regst_desc_id`` -> ``inplace_consumed_regst_desc_id``, the
variable register's block and offset), so the task copies nothing; the plan verifier accepts exactly that overlap
and checks that every reader of the shared register is ordered before the variable's update (compiler/inplace.py).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler.plan_builder import PlanBuilder
from flowlab.compiler.verify import check_plan
from flowlab.errors import CompileError
from flowlab.ir import from_json, to_json
from tests.helpers.adversarial import data_successors, reaches_any, step_updates_first, update_tasks

ROWS, IN, OUT, LR = 6, 4, 3, 0.1


def _train(devices: int, reuse: bool = True):
    """Per device: h = x_i @ w.T, loss = sum(h * h) per row; ``peek`` = w * 1 is a mirrored reader of w whose
    result no gradient needs (only its return): nothing but an ordering edge keeps the update after it."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())
    config.enable_reuse_mem(reuse)

    @flow.global_function(type="train", function_config=config)
    def train(x: tp.ListNumpy.Placeholder((ROWS // devices, IN))) -> tuple[tp.ListNumpy, tp.ListNumpy]:
        w = flow.get_variable("w", shape=(OUT, IN), initializer=flow.constant_initializer(0.1))
        h = flow.matmul(x, w, transpose_b=True)
        loss = flow.math.reduce_sum(h * h, axis=1)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=0.0).minimize(loss)
        return loss, w * 1.0

    return train


def _numpy(batches: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    w = np.full((OUT, IN), 0.1, np.float32)
    losses, peeks = [], []
    for x in batches:
        h = x @ w.T
        losses.append((h * h).sum(axis=1))
        peeks.append(w.copy())
        w = w - LR * ((2 * h / ROWS).T @ x)
    return losses, peeks, w


def _batches(n: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.standard_normal((ROWS, IN)).astype(np.float32) for _ in range(n)]


def _clone_tasks(plan, name: str = "train"):
    return [t for t in plan.tasks_of_job(name) if t.task_type == "DistributeSplit"]


@pytest.mark.parametrize("devices", [2, 3])
def test_the_clone_of_a_variable_is_its_memory_and_copies_nothing(devices):
    train = _train(devices)
    batches = _batches()
    want_losses, want_peeks, want_w = _numpy(batches)
    for x, loss, peek in zip(batches, want_losses, want_peeks):
        losses, peeks = train(list(np.split(x, devices)))
        np.testing.assert_allclose(np.concatenate(losses), loss, rtol=1e-5)
        assert len(peeks) == devices
        for got in peeks:  # every device read w before its update
            np.testing.assert_allclose(got, peek, rtol=1e-6)
    np.testing.assert_allclose(flow.get_all_variables()["w"], want_w, rtol=1e-5)
    session = flow.default_session()
    user = session.job_set.job("train")
    (clone,) = [op for op in user.ops if op.op_type == "distribute_clone"]
    assert clone.attrs["is_variable_ref"] is True and "is_variable_ref=True" in str(user)
    (grad,) = [op for op in user.ops if op.name == f"{clone.name}_grad"]
    assert grad.attrs["is_variable_ref"] is False  # the DistributeAdd is its own memory, as before
    plan = session.plan
    regsts = plan.regst_descs
    tasks = _clone_tasks(plan)
    assert len(tasks) == devices
    for t in tasks:
        out = t.produced_regst_desc["out"]
        (var_id,) = t.consumed_regst_desc_id["in"]
        var = regsts[var_id]
        assert plan.task(var.producer_task_id).name == "w"
        assert out.force_inplace_consumed_regst_desc_id == var_id == out.inplace_consumed_regst_desc_id
        assert (out.mem_block_id, out.mem_block_offset, out.regst_size) == \
            (var.mem_block_id, var.mem_block_offset, var.regst_size)
        assert not plan.mem_block(out.mem_block_id).enable_reuse_mem
        assert f"inplace_consumed=r{var_id}" in str(t)
        actor = session.runtime.actor(t.task_id)
        assert actor.kernel is None  # no copy: its register's arrays are the variable's
        (array,) = session.runtime.regsts[out.regst_desc_id][0].blobs.values()
        (var_array,) = session.runtime.regsts[var_id][0].blobs.values()
        assert np.shares_memory(array, var_array)
    back = from_json(to_json(plan))  # the in-place fields round-trip
    assert back.regst_descs[out.regst_desc_id].inplace_consumed_regst_desc_id == out.inplace_consumed_regst_desc_id
    check_plan(back)
    # the DistributeAdd's registers are new memory, as any other
    assert all(r.inplace_consumed_regst_desc_id < 0 for t in plan.tasks_of_op("train", f"{clone.name}_grad")
               for r in t.produced_regst_desc.values())


@pytest.mark.parametrize("devices", [2, 3])
def test_a_split_variable_read_by_a_mirrored_op_is_split_in_place(devices):
    """A variable lying S(0) is split for a mirrored reader in a train job: device i's variable register already
    holds its rows, so the split's piece is that register, at offset 0; the split's gradient (a DistributeConcat
    of each device's own gradient of its rows, a matmul's lying P) updates those rows, after the read."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())
    rows = 2 * devices
    value = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4) / 10

    @flow.global_function(type="train", function_config=config)
    def job(x: tp.ListNumpy.Placeholder((1, 4))) -> tp.ListNumpy:
        w = flow.get_variable("w", shape=(rows, 4), initializer=flow.zeros_initializer(),
                              distribute=flow.distribute.split(0))
        h = flow.matmul(x, w, transpose_b=True)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR])).minimize(h * h)
        return h

    flow.load_variables({"w": value})
    xs = [np.full((1, 4), 0.5 * (i + 1), np.float32) for i in range(devices)]
    got = job(xs)
    want_w = value.copy()
    for i, piece in enumerate(got):  # device i's rows of w (before their update), times its own x
        h = xs[i] @ value[2 * i:2 * i + 2].T
        np.testing.assert_allclose(piece, h, rtol=1e-6)
        # the loss count: the dynamic loss's rows, 1 on each device (OneFlow's dynamic loss instance number)
        want_w[2 * i:2 * i + 2] -= LR * (2 * h / devices).T @ xs[i]
    np.testing.assert_allclose(flow.get_all_variables()["w"], want_w, rtol=1e-6)
    plan = flow.default_session().plan
    user = flow.default_session().job_set.job("job")
    (split_op,) = [op for op in user.ops if op.op_type == "distribute_split"]
    assert split_op.attrs["is_variable_ref"] is True
    tasks = plan.tasks_of_op("job", split_op.name)
    assert len(tasks) == devices
    for t in tasks:
        out = t.produced_regst_desc["out"]
        var = plan.regst_descs[t.consumed_regst_desc_id["in"][0]]
        assert out.inplace_consumed_regst_desc_id == var.regst_desc_id
        assert (out.mem_block_id, out.mem_block_offset) == (var.mem_block_id, var.mem_block_offset)
    check_plan(plan)


def _adversarial_call(train, xs):
    """Step one call, always acting a variable's update as soon as it is ready, and a reader of a variable's ref
    register that no update waits on by data as late as any other actor can act: what an unordered Plan lets a
    scheduler do."""

    def loose(plan) -> set[int]:
        succ, updates = data_successors(plan), update_tasks(plan)
        return {c for r in plan.regst_descs.values() if r.inplace_consumed_regst_desc_id >= 0
                for c in r.consumer_task_ids if not reaches_any(succ, c, updates)}

    dbg = flow.debug(train, xs)
    step_updates_first(dbg, loose)
    return dbg.result


@pytest.mark.parametrize("devices", [2, 3])
def test_an_update_never_overtakes_a_reader_of_the_variable_ref(monkeypatch, devices):
    """Without the chains' ordering edges nothing but data orders ``peek`` (read only for its return) before the
    update of w; the in-place pass orders it by a control edge, so an adversarial schedule still reads w before
    its update. (Without that edge the same schedule returned the updated w.)"""
    monkeypatch.setattr(PlanBuilder, "order_chains", lambda self, job_id: None)
    train = _train(devices, reuse=False)  # no reused memory: the chain edges guard nothing else here
    batches = _batches(2)
    want_losses, want_peeks, _ = _numpy(batches)
    for x, loss, peek in zip(batches, want_losses, want_peeks):
        losses, peeks = _adversarial_call(train, list(np.split(x, devices)))
        np.testing.assert_allclose(np.concatenate(losses), loss, rtol=1e-5)
        for got in peeks:  # w before its update (after it, w moves by ~1e-2)
            np.testing.assert_allclose(got, peek, rtol=1e-6)
        train(list(np.split(x, devices)))  # the debugger's run leaves the session's variables: step them too
    plan = flow.default_session().plan
    regsts = plan.regst_descs
    peek_tasks = plan.tasks_of_op("train", "scalar_mul_0")
    updates = [t for t in plan.tasks_of_job("train") if t.op_types[0].endswith("_update")]
    for update in updates:
        ctrl_from = {regsts[i].producer_task_id for i in update.consumed_regst_desc_id.get("in_ctrl", ())}
        assert any(p.task_id in ctrl_from for p in peek_tasks)
    check_plan(plan)
    # the verifier rejects the Plan without those edges
    broken = [t if t not in updates else dataclasses.replace(t, consumed_regst_desc_id={
        k: tuple(i for i in v if regsts[i].producer_task_id not in {p.task_id for p in peek_tasks})
        for k, v in t.consumed_regst_desc_id.items()}) for t in plan.tasks]
    with pytest.raises(CompileError, match="not ordered before .*could overtake"):
        check_plan(dataclasses.replace(plan, tasks=tuple(broken)))


def test_the_verifier_accepts_the_shared_memory_only_for_the_in_place_pair():
    _train(2)(list(np.split(_batches(1)[0], 2)))
    plan = flow.default_session().plan
    check_plan(plan)
    clone = _clone_tasks(plan)[0]
    out = clone.produced_regst_desc["out"]

    def with_out(**changes):
        new_out = dataclasses.replace(out, **changes)
        task = dataclasses.replace(clone, produced_regst_desc={**clone.produced_regst_desc, "out": new_out})
        return dataclasses.replace(plan, tasks=tuple(task if t is clone else t for t in plan.tasks))

    # the same bytes without the in-place grant: an overlap of two registers in a fixed block
    with pytest.raises(CompileError, match="overlap in fixed block"):
        check_plan(with_out(inplace_consumed_regst_desc_id=-1, force_inplace_consumed_regst_desc_id=-1))
    # a grant naming a register its task does not read
    other = next(r for r in plan.regst_descs.values() if not r.is_ctrl and r.regst_desc_id not in clone.consumed_ids)
    with pytest.raises(CompileError, match="which its task does not consume"):
        check_plan(with_out(inplace_consumed_regst_desc_id=other.regst_desc_id))
    # a grant whose register does not lie exactly on the variable's
    block = plan.mem_block(out.mem_block_id)
    with pytest.raises(CompileError, match="does not lie exactly on its memory"):
        check_plan(dataclasses.replace(with_out(mem_block_offset=64), mem_blocks=tuple(
            dataclasses.replace(b, mem_size=b.mem_size + 128) if b is block else b for b in plan.mem_blocks)))


def test_the_debugger_shows_the_ref_register_as_the_variables_memory():
    """The memory chart has no lifetime of its own for a clone's register: its acts extend the variable's, which
    lists the clone's blob too; the register's detail pane says whose bytes it is."""
    from flowlab.viz.payload_details import PlanIndex

    train = _train(2)
    xs = list(np.split(_batches(1)[0], 2))
    dbg = flow.debug(train, xs)
    dbg.continue_()
    plan = dbg.plan
    clones = _clone_tasks(plan)
    refs = {t.produced_regst_desc["out"].regst_desc_id: t.consumed_regst_desc_id["in"][0] for t in clones}
    lifetimes = dbg.memory().lifetimes
    assert not [lt for lt in lifetimes if lt.regst in refs]  # never a new allocation
    last_reads = {}
    for act in dbg.recording().acts:
        for r in act["reads"]:
            last_reads[int(r[2:])] = act["index"]
    for ref, var in refs.items():
        # the variable's register is live from the start, again from each act of the variable's task (one here)
        lt = [lt for lt in lifetimes if lt.regst == var][-1]
        assert "w/out" in lt.lbns and plan.regst_descs[ref].lbi2blob_desc.keys() <= set(lt.lbns)
        assert lt.last_act >= last_reads[ref]  # live until the last read through the clone
    index = PlanIndex(plan.tasks, plan.mem_blocks)
    ref, var = next(iter(refs.items()))
    rows = dict(map(tuple, index.regst_section("out", plan.regst_descs[ref], plan.job_names)["rows"]))
    assert rows["in place of"].startswith(f"r{var} (w): the same bytes")
    # the Plan view's shared block (the variable's, with model I/O) and the DOT tooltip say it too
    from flowlab.viz import plan_payload
    from flowlab.viz.plan_dot import regst_tooltip

    block = plan.regst_descs[ref].mem_block_id
    detail = plan_payload(plan)["graph"]["details"][f"d:b:{block}"]
    (memory,) = [sec for sec in detail["sections"] if sec["title"] == "memory block"]
    assert [f"r{ref}", f"{clones[0].name} + 0 (in place of r{var})"] in [list(r) for r in memory["rows"]]
    assert f"in place of regst {var}" in regst_tooltip(plan.regst_descs[ref], clones[0], "out", "matmul", "in")


@pytest.mark.parametrize("devices", [2, 3])
def test_reading_in_place_is_the_copying_plan_bit_for_bit(monkeypatch, devices):
    """The same calls on the Plan whose clone copies (the in-place pass off) and on the in-place one: the same
    losses, reads and variables, bit for bit (replayed and fused calls included: 12 calls)."""
    import flowlab.compiler.plan_stages as plan_stages  # build_plan runs its stages there

    batches = _batches(12)
    runs = {}
    for mode in ("copy", "in place"):
        if mode == "copy":
            monkeypatch.setattr(plan_stages, "set_variable_ref_inplace", lambda pb: None)
        else:
            monkeypatch.undo()
        train = _train(devices)
        outs = [train(list(np.split(x, devices))) for x in batches]
        shared = [t.produced_regst_desc["out"].inplace_consumed_regst_desc_id >= 0
                  for t in _clone_tasks(flow.default_session().plan)]
        assert shared and all(shared) == (mode == "in place")
        runs[mode] = (outs, flow.get_all_variables()["w"])
    for (losses_a, peeks_a), (losses_b, peeks_b) in zip(runs["copy"][0], runs["in place"][0]):
        for a, b in zip([*losses_a, *peeks_a], [*losses_b, *peeks_b]):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(runs["copy"][1], runs["in place"][1])


def test_a_reader_after_the_update_keeps_the_clones_copy():
    """Where the update comes before a reader (here a control edge from the update to ``peek``), ordering the
    reader first would close a cycle: the register keeps its own memory and the task copies, as OneFlow drops such
    an in-place edge."""
    from flowlab.compiler.plan_builder import build_plan

    _train(2)(list(np.split(_batches(1)[0], 2)))
    session = flow.default_session()
    jobs = list(session.job_set.jobs[:-1])  # without the main job, which build_plan makes
    k = next(i for i, j in enumerate(jobs) if j.name == "train")
    user = jobs[k]
    (update,) = [op for op in user.ops if op.op_type.endswith("_update")]
    peek = user.op("scalar_mul_0")
    jobs[k] = user.replace(ops=tuple(op.replace(ctrl_in_op_names=(*op.ctrl_in_op_names, update.name))
                                     if op is peek else op for op in user.ops))
    _main, plan = build_plan(jobs, cpu_device_num=2)
    for t in _clone_tasks(plan):
        out = t.produced_regst_desc["out"]
        assert out.inplace_consumed_regst_desc_id == out.force_inplace_consumed_regst_desc_id == -1
        var = plan.regst_descs[t.consumed_regst_desc_id["in"][0]]
        assert out.mem_block_id != var.mem_block_id
    _main, plan = build_plan(list(session.job_set.jobs[:-1]), cpu_device_num=2)  # the job as compiled: in place
    assert all(t.produced_regst_desc["out"].inplace_consumed_regst_desc_id >= 0 for t in _clone_tasks(plan))


def test_injecting_into_the_ref_writes_the_variable():
    """The debugger's inject into the clone's blob writes the variable's bytes, which every reader then reads."""
    train = _train(2)
    x = _batches(1)[0]
    dbg = flow.debug(train, list(np.split(x, 2)))
    clone = _clone_tasks(dbg.plan)[0]
    lbn = clone.exec_sequence[0].output_lbns[0]
    dbg.run_to(clone.name)
    dbg.step()  # the clone of device 0 (parallel_id 0) acted: its register is live
    dbg.inject(lbn, np.full((OUT, IN), 0.5, np.float32))
    var = dbg.runtime.regsts[clone.consumed_regst_desc_id["in"][0]][0].blobs["w/out"]
    np.testing.assert_array_equal(var, np.full((OUT, IN), 0.5, np.float32))
    dbg.continue_()
    losses, peeks = dbg.result
    np.testing.assert_array_equal(peeks[0], np.full((OUT, IN), 0.5, np.float32))  # device 0 read the injected w
    np.testing.assert_allclose(losses[0], ((x[:ROWS // 2] @ np.full((IN, OUT), 0.5, np.float32)) ** 2).sum(axis=1),
                               rtol=1e-5)
