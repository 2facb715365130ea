"""distributed_split's all-gather with a device's own rows in place (compiler/gather_inplace.py): each device's
gathered weight register holds that device's variable register as a piece (``piece_inplace_consumed_regst_desc_id``,
``piece_inplace_offset``), its copy task moves only the other devices' rows, every reader of the gathered weight
is ordered before the variable's update, and the results are the copying Plan's bit for bit."""

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
from flowlab.runtime.variables import variable_pieces
from tests.helpers.adversarial import data_successors, reaches_any, step_updates_first, update_tasks
from tests.helpers.optimizer_placement import C, D, H, batches, config, initial_weights, optimizer


def define(devices: int, mode: str | None = "distributed_split", reuse: bool = True):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    cfg = config(mode)
    cfg.enable_reuse_mem(reuse)

    @flow.global_function(type="train", function_config=cfg)
    def train_job(images: tp.Numpy.Placeholder((12, D)),
                  labels: tp.Numpy.Placeholder((12,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            h = flow.layers.dense(images, H, activation=flow.nn.relu, name="hidden")
            logits = flow.layers.dense(h, C, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
            optimizer("momentum").minimize(loss)
        return loss

    flow.load_variables(initial_weights())
    return train_job


def gathers(plan) -> list:
    """The all-gather copy tasks of the train job that hold a variable as a piece."""
    return [t for t in plan.tasks_of_job("train_job") if t.is_boxing
            and t.produced_regst_desc["out"].piece_inplace_consumed_regst_desc_id >= 0]


@pytest.mark.parametrize("devices", [2, 3])
def test_each_device_gathers_around_its_own_rows(devices):
    job = define(devices)
    job(*batches()[0])
    plan = flow.default_session().plan
    tasks = gathers(plan)
    assert len(tasks) == 4 * devices  # the weights and the biases (threshold 1), one gather each per device
    regsts = plan.regst_descs
    by_id = {r.regst_desc_id: t for t in plan.tasks for r in t.produced_regst_desc.values()}
    for task in tasks:
        out = task.produced_regst_desc["out"]
        piece = regsts[out.piece_inplace_consumed_regst_desc_id]
        var = by_id[piece.regst_desc_id]
        # the variable's task on the gather's own device (a boxing task's placement is its one device)
        assert var.exec_sequence[0].op_type == "variable"
        assert task.exec_sequence[0].parallel_conf.device_names == (f"0:{var.parallel_id}",)
        ((lbn, whole),) = out.lbi2blob_desc.items()
        (rows_desc,) = piece.lbi2blob_desc.values()
        row = whole.nbytes // whole.shape[0]
        assert out.piece_inplace_offset == var.parallel_id * rows_desc.shape[0] * row
        assert (piece.mem_block_id, piece.mem_block_offset) == (out.mem_block_id,
                                                                out.mem_block_offset + out.piece_inplace_offset)
        assert out.register_num == piece.register_num == 1
        assert f"piece_inplace_consumed=r{piece.regst_desc_id}+{out.piece_inplace_offset}" in str(task)
    # the gathered arrays' own rows are the variables' bytes
    rt = flow.default_session().runtime
    for task in tasks:
        out = task.produced_regst_desc["out"]
        gathered = next(iter(rt.regsts[out.regst_desc_id][0].blobs.values()))
        own = next(iter(rt.regsts[out.piece_inplace_consumed_regst_desc_id][0].blobs.values()))
        k = by_id[out.piece_inplace_consumed_regst_desc_id].parallel_id
        assert gathered[k * own.shape[0]:(k + 1) * own.shape[0]].ctypes.data == own.ctypes.data
    back = from_json(to_json(plan))
    assert back.regst_descs[out.regst_desc_id].piece_inplace_offset == out.piece_inplace_offset
    check_plan(back)


def test_plain_data_parallel_has_no_piece_grant():
    job = define(2, mode=None)
    job(*batches()[0])
    assert not gathers(flow.default_session().plan)


def test_the_copy_kernel_moves_only_the_other_devices_rows():
    from flowlab.runtime.boxing_kernels import boxing_kernel

    job = define(3)
    job(*batches()[0])
    rt = flow.default_session().runtime
    for task in gathers(rt.plan):
        ins = [next(iter(rt.regsts[i][0].blobs.values())) for name, ids in task.consumed_regst_desc_id.items()
               if name.startswith("in_") for i in ids]
        out = next(iter(rt.regsts[task.produced_regst_desc["out"].regst_desc_id][0].blobs.values()))
        call = boxing_kernel(rt, task).fused(ins, [out])  # type: ignore[attr-defined]
        assert len(call.args) == 2 * 2  # (source, destination) for each of the two other devices
        own = next(iter(rt.regsts[task.produced_regst_desc["out"].piece_inplace_consumed_regst_desc_id][0]
                        .blobs.values()))
        assert not any(np.shares_memory(a, own) for a in call.args)


@pytest.mark.parametrize("devices", [2, 3])
def test_the_gather_in_place_is_the_copying_plan_bit_for_bit(monkeypatch, devices):
    """12 calls (protocol, replayed, fused lanes) with the grant and without it: the same losses and variables."""
    import flowlab.compiler.plan_stages as plan_stages  # build_plan runs its stages there

    runs = {}
    for mode in ("copy", "in place"):
        if mode == "copy":
            monkeypatch.setattr(plan_stages, "set_all_gather_inplace", lambda pb: None)
        else:
            monkeypatch.undo()
        job = define(devices)
        losses = [job(x, y) for _ in range(3) for x, y in batches()]
        assert bool(gathers(flow.default_session().plan)) == (mode == "in place")
        runs[mode] = losses, flow.get_all_variables()
    for a, b in zip(runs["copy"][0], runs["in place"][0]):
        np.testing.assert_array_equal(a, b)
    for name, value in runs["copy"][1].items():
        np.testing.assert_array_equal(runs["in place"][1][name], value)


def _adversarial_call(job, args):
    """Step one call, acting every update as soon as it is ready and every reader of a gathered weight that feeds
    no update of that weight (the backward's matmul by the output weight) as late as any actor can act."""

    def loose(plan) -> set[int]:
        succ, updates, regsts = data_successors(plan), update_tasks(plan), plan.regst_descs
        late: set[int] = set()
        for task in gathers(plan):
            out = task.produced_regst_desc["out"]
            writers = set(regsts[out.piece_inplace_consumed_regst_desc_id].consumer_task_ids) & updates
            late |= {c for c in out.consumer_task_ids if not reaches_any(succ, c, writers)}
        return late

    dbg = flow.debug(job, *args)
    step_updates_first(dbg, loose)
    return {name: [a.copy() for a in pieces.arrays] for name, pieces in variable_pieces(dbg.runtime).items()}


def _without_update_ctrl_edges(monkeypatch) -> None:
    """Drop the update's ordering after the variable's readers that optimizer_ops.py puts in the Job, and the
    chains' ordering edges: then nothing but data orders the backward's read of the gathered output weight before
    that weight's update, and only the Plan's own edges (gather_inplace.py) can."""
    from flowlab.frontend.builder import JobBuilder

    add_op = JobBuilder.add_op

    def without(self, op_type, inputs=None, attrs=None, name=None, **kw):
        if name is not None and name.endswith("_optimizer"):
            kw["ctrl_in_op_names"] = ()
        return add_op(self, op_type, inputs, attrs, name, **kw)

    monkeypatch.setattr(JobBuilder, "add_op", without)
    monkeypatch.setattr(PlanBuilder, "order_chains", lambda self, job_id: None)


@pytest.mark.parametrize("devices", [2, 3])
def test_an_update_never_overtakes_a_reader_of_the_gathered_weight(monkeypatch, devices):
    """With the Job's and the chains' ordering edges gone, the pass orders each reader of a gathered weight
    before that weight's update by a control edge, so an adversarial schedule computes the step the session
    computes. (Without that edge the same schedule updated the hidden weight with a gradient through the already
    updated output weight.)"""
    _without_update_ctrl_edges(monkeypatch)
    job = define(devices, reuse=False)  # no reused memory: the chain edges guard nothing else here
    data = batches()
    job(*data[0])
    for x, y in data[1:3]:
        adversarial = _adversarial_call(job, (x, y))
        job(x, y)
        for name, pieces in variable_pieces(flow.default_session().runtime).items():
            for got, want in zip(adversarial[name], pieces.arrays, strict=True):
                np.testing.assert_array_equal(got, want, err_msg=name)
    plan = flow.default_session().plan
    check_plan(plan)
    # the verifier rejects the Plan without those edges
    regsts = plan.regst_descs
    readers = {c for t in gathers(plan) for c in t.produced_regst_desc["out"].consumer_task_ids}
    broken = [dataclasses.replace(t, consumed_regst_desc_id={
        k: tuple(i for i in v if k != "in_ctrl" or regsts[i].producer_task_id not in readers)
        for k, v in t.consumed_regst_desc_id.items()}) if t.op_types[0].endswith("_update") else t
        for t in plan.tasks]
    with pytest.raises(CompileError, match="not ordered before .*could overtake"):
        check_plan(dataclasses.replace(plan, tasks=tuple(broken)))


def test_the_verifier_accepts_the_overlap_only_for_the_piece_grant():
    job = define(2)
    job(*batches()[0])
    plan = flow.default_session().plan
    check_plan(plan)
    task = gathers(plan)[1]  # device 1: its rows lie past the register's start
    out = task.produced_regst_desc["out"]

    def with_out(**changes):
        new_out = dataclasses.replace(out, **changes)
        new = dataclasses.replace(task, produced_regst_desc={**task.produced_regst_desc, "out": new_out})
        return dataclasses.replace(plan, tasks=tuple(new if t is task else t for t in plan.tasks))

    with pytest.raises(CompileError, match="overlap in fixed block"):  # the same bytes without the grant
        check_plan(with_out(piece_inplace_consumed_regst_desc_id=-1, piece_inplace_offset=0))
    with pytest.raises(CompileError, match="does not lie there"):  # a grant at the wrong rows
        check_plan(with_out(piece_inplace_offset=0))
    other = next(r for r in plan.regst_descs.values() if not r.is_ctrl and r.regst_desc_id not in task.consumed_ids)
    with pytest.raises(CompileError, match="its task does not consume it"):
        check_plan(with_out(piece_inplace_consumed_regst_desc_id=other.regst_desc_id))
    with pytest.raises(CompileError, match="does not lie there"):  # rotating over one variable
        check_plan(with_out(register_num=2))


@pytest.mark.parametrize("replay", [True, False], ids=["replay", "protocol"])
def test_a_failed_update_leaves_no_half_updated_weight_visible(monkeypatch, replay):
    """The last update of a call fails after the others wrote their rows, which are the gathered weights' rows
    too: the call guard puts every variable back, so the next call gathers the last step's weights, and the
    training goes on as a session that never saw the failed call, bit for bit."""
    from tests.helpers.failure_semantics import assert_same_variables, failing_late

    monkeypatch.setenv("FLOWLAB_REPLAY", "1" if replay else "0")
    state = failing_late(monkeypatch, "momentum_update")
    good = [*batches(), *batches()][:6]
    ref = define(2)
    ref_losses = [ref(x, y) for x, y in good]
    ref_vars = flow.get_all_variables()
    job = define(2)
    state["acts"] = 0
    losses = [job(x, y) for x, y in good[:4]]
    state["per_call"] = state["acts"] // 4  # one update act per variable and device
    assert state["per_call"] == 8 and gathers(flow.default_session().plan)
    state["acts"], state["armed"] = 0, True
    before = flow.get_all_variables()
    with pytest.raises(flow.errors.KernelError, match="simulated failure of the last update"):
        job(*good[4])
    assert_same_variables(flow.get_all_variables(), before)
    state["armed"] = False
    losses += [job(x, y) for x, y in good[4:]]
    for got, want in zip(losses, ref_losses, strict=True):
        np.testing.assert_array_equal(got, want)
    assert_same_variables(flow.get_all_variables(), ref_vars)


def test_the_debugger_shows_the_gathered_weights_memory_as_shared():
    """The register pane of a gathered weight says which bytes are the variable's; the variable's pane says which
    register gathers around it; the memory chart's bars for the gathered weight leave out the variable's rows
    (no byte counted twice) and a read of it keeps the variable's bar live."""
    from flowlab.viz import plan_payload
    from flowlab.viz.payload_details import PlanIndex
    from flowlab.viz.plan_dot import regst_tooltip

    job = define(2)
    x, y = batches()[0]
    job(x, y)
    dbg = flow.debug(job, x, y)
    dbg.continue_()
    plan = dbg.plan
    task = gathers(plan)[1]  # device 1: the variable's rows come last
    out = task.produced_regst_desc["out"]
    var = out.piece_inplace_consumed_regst_desc_id
    var_task = next(t for t in plan.tasks if var in {r.regst_desc_id for r in t.produced_regst_desc.values()})
    index = PlanIndex(plan.tasks, plan.mem_blocks)
    rows = [tuple(r) for r in index.regst_section("out", out, plan.job_names)["rows"]]
    assert ("shared memory", f"bytes {out.piece_inplace_offset}.. are r{var} ({var_task.name}), held in place: not "
            "copied, its update writes them (piece_inplace_consumed_regst_desc_id)") in rows
    var_rows = [tuple(r) for r in index.regst_section("out", plan.regst_descs[var], plan.job_names)["rows"]]
    assert ("shared memory", f"also r{out.regst_desc_id} ({task.name}) from its byte {out.piece_inplace_offset}: "
            "it gathers around it") in var_rows
    assert f"holds regst {var} in place at byte {out.piece_inplace_offset}" in regst_tooltip(
        out, task, "out", "matmul", "in")
    detail = plan_payload(plan)["graph"]["details"][f"d:b:{out.mem_block_id}"]
    (memory,) = [sec for sec in detail["sections"] if sec["title"] == "memory block"]
    assert [f"r{out.regst_desc_id}", f"{task.name} + {out.mem_block_offset} (holds r{var} at "
            f"+{out.piece_inplace_offset})"] in [list(r) for r in memory["rows"]]
    mem = dbg.memory()
    bars = [lt for lt in mem.lifetimes if lt.regst == out.regst_desc_id]
    var_bar = [lt for lt in mem.lifetimes if lt.regst == var][-1]
    assert bars and all(lt.offset + lt.size <= var_bar.offset or lt.offset >= var_bar.offset + var_bar.size
                        for lt in bars)  # never over the variable's bytes
    own = sum(d.nbytes for d in plan.regst_descs[var].lbi2blob_desc.values())
    assert sum(lt.size for lt in bars) == out.regst_size - own
    reads = [a["index"] for a in dbg.recording().acts if f"r:{out.regst_desc_id}" in a["reads"]]
    assert var_bar.last_act >= max(reads)


def test_a_gathers_lane_step_writes_only_around_its_variable():
    """The lanes (replay/lanes.py) order steps by the bytes they touch: a gather's step reads its variable and
    writes only the rows around it, so the other device's gather reading that variable waits on neither it nor it
    on that one (with the whole output counted as written, it did, and the busiest lane took longer than copying)."""
    from flowlab.replay.lane_order import without_piece
    from flowlab.replay.lanes import step_ranges
    from tests.helpers.lanes import lane_schedules

    assert without_piece([(0, 10, False), (100, 200, True)], []) == [(0, 10, False), (100, 200, True)]
    other, whole = np.zeros(30, np.uint8), np.zeros(40, np.uint8)
    own = whole[10:20]  # a piece inside the output: its bytes are read, the rest written
    lo, hi = whole.ctypes.data, whole.ctypes.data + 40
    assert without_piece([(own.ctypes.data, own.ctypes.data + 10, False), (other.ctypes.data,
                          other.ctypes.data + 30, False), (lo, hi, True)], [own, other]) == [
        (own.ctypes.data, own.ctypes.data + 10, False), (other.ctypes.data, other.ctypes.data + 30, False),
        (lo, lo + 10, True), (lo + 20, hi, True)]
    job = define(2)
    for _ in range(12):
        job(*batches()[0])
    rt = flow.default_session().runtime
    schedules = [s for s in lane_schedules(rt.layer) if any("train" in n for n in s.key)]
    assert schedules  # one per order of the rotating registers
    seen = 0
    for step, actor in ((st, a) for s in schedules for st, a in zip(s.steps, s.step_actors)):
        if actor is None or actor.task not in gathers(rt.plan):
            continue
        out = actor.task.produced_regst_desc["out"]
        var = next(iter(rt.regsts[out.piece_inplace_consumed_regst_desc_id][0].blobs.values()))
        low, high = var.ctypes.data, var.ctypes.data + var.nbytes
        ranges = step_ranges(step, actor)
        assert (low, high, False) in ranges
        assert not [r for r in ranges if r[2] and r[0] < high and low < r[1]]
        seen += 1
    assert seen == 8 * len(schedules)  # 4 variables on 2 devices
