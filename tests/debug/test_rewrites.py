"""flow.debug.rewrites: every rewrite of a compile, in order, checked against the recorded passes and the final
Plan (the Plan's tasks and registers named here from the Plan itself, not through debug/rewrite_tables.py)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler import compile_jobs

ROOT = Path(flow.__file__).resolve().parent.parent
X = np.arange(12, dtype=np.float32).reshape(4, 3) - 6


def relu_session():
    """Two devices: the Return on one gathers relu's halves through a boxing task (test_multi_device_plan.py)."""
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def relu_job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            return flow.math.relu(x)

    relu_job(X)
    return flow.default_session()


def train_session():
    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3, 2), initializer=flow.constant_initializer(0.5))
        loss = flow.math.reduce_mean(flow.matmul(x, w))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    train_job(X)
    return flow.default_session()


def _task_label(plan, task) -> str:
    return f"{plan.job_names[task.job_id]}/{task.name}" + (f" [{task.parallel_id}]" if task.parallel_id else "")


def _regst_labels(plan) -> set[str]:
    return {f"{_task_label(plan, t)} {name}" for t in plan.tasks for name in t.produced_regst_desc}


@pytest.fixture(params=["relu", "train"])
def session(request):
    return relu_session() if request.param == "relu" else train_session()


def test_every_recorded_pass_appears_in_order_with_its_jobs(session):
    rw = flow.debug.rewrites(session)
    records = list(session.passes)
    from_records = [r for r in rw if r.kind == "job" and not r.name.startswith("Make") and r.name != "WatchPieces"]
    assert [(r.name, r.job) for r in from_records] == [(p.name, p.job_name) for p in records]
    assert all(r.before is p.before and r.after is p.after for r, p in zip(from_records, records))
    assert [r.index for r in rw] == list(range(len(rw)))
    # the Plan's stages come last, in build order
    assert [r.name for r in rw if r.kind == "plan"] == [
        "AddTasks", "ConnectRegstsAndBoxing", "SetVariableRefInplace", "SetAllGatherInplace", "LinkMainPlan",
        "InsertCopyHd", "PlanMemory"]
    assert all(r.kind == "plan" for r in rw[-7:])


def test_job_rewrites_added_removed_changed_are_the_set_differences(session):
    for r in flow.debug.rewrites(session):
        if r.kind != "job":
            continue
        before = {op.name: (op, r.before.sbp_signatures.get(op.name)) for op in r.before.ops}
        after = {op.name: (op, r.after.sbp_signatures.get(op.name)) for op in r.after.ops}
        assert set(r.added) == after.keys() - before.keys(), r.name
        assert set(r.removed) == before.keys() - after.keys(), r.name
        assert set(r.changed) == {n for n in after.keys() & before.keys() if after[n] != before[n]}, r.name


def test_system_and_main_jobs_are_built_from_nothing(session):
    rw = flow.debug.rewrites(session)
    for job in session.job_set:
        built = [r for r in rw if r.job == job.name and r.name.startswith("Make")]
        if job.kind == "user":
            assert not built
            continue
        (make,) = built
        assert not make.before.ops and set(make.added) == {op.name for op in make.after.ops}
        assert make.index < min(r.index for r in rw if r.job == job.name and r is not make)


def test_the_last_rewrite_ends_at_the_final_plan():
    session = relu_session()
    rw = flow.debug.rewrites(session)
    plan = session.plan
    last = rw[-1]
    assert last.name == "PlanMemory"
    assert set(last.after.tasks) == {_task_label(plan, t) for t in plan.tasks}
    assert {k: v[0] for k, v in last.after.tasks.items()} == {_task_label(plan, t): t.task_type for t in plan.tasks}
    assert set(last.after.registers) == _regst_labels(plan)
    assert last.after.as_plan() is plan
    # memory planning places every data register and no control one
    data = {f"{_task_label(plan, t)} {n}" for t in plan.tasks for n, r in t.produced_regst_desc.items()
            if r.regst_desc_type == "data"}
    assert set(last.changed) == data and not last.added and not last.removed


def test_plan_stages_add_up_to_the_plan_and_boxing_tasks_come_from_connect():
    session = relu_session()
    rw = flow.debug.rewrites(session)
    plan = session.plan
    stages = [r for r in rw if r.kind == "plan"]
    assert not stages[0].before.tasks and not stages[0].before.registers
    for a, b in zip(stages, stages[1:]):
        assert b.before is a.after
    tasks, regsts = set(), set()
    for r in stages:
        tasks |= {n for n in r.added if n in r.after.tasks}
        tasks -= set(r.removed)
        regsts |= {n for n in r.added if n in r.after.registers}
        regsts -= set(r.removed)
    assert tasks == {_task_label(plan, t) for t in plan.tasks}
    assert regsts == _regst_labels(plan)
    # AddTasks makes a task per op and device (the source tick is the main job's); boxing comes with the edges
    add, connect = stages[0], stages[1]
    boxing = {_task_label(plan, t) for t in plan.tasks if t.is_boxing}
    assert boxing and boxing <= set(connect.added) and not boxing & set(add.added)
    per_device = sum(len(op.parallel_conf.devices) for job in session.job_set for op in job.ops
                     if op.op_type != "source_tick")
    assert len(add.added) == per_device


def test_provenance_of_a_boxing_task_names_the_boxing_stage():
    session = relu_session()
    rw = flow.debug.rewrites(session)
    (box,) = [t for t in session.plan.tasks if t.is_boxing and t.job_id == 0]
    label = _task_label(session.plan, box)
    assert rw.made(label).name == "ConnectRegstsAndBoxing"
    assert rw.made(box.name).name == "ConnectRegstsAndBoxing"  # by its op's name
    assert rw.made(f"{label} out").name == "ConnectRegstsAndBoxing"  # its register
    assert rw.made("System-AutoTick-SinkTick").name == "AutoSinkTick"
    with pytest.raises(KeyError, match="traced job 'relu_job'"):
        rw.made("relu_0")
    with pytest.raises(KeyError, match="no rewrite made an op, task or register named 'nothing'"):
        rw.made("nothing")


def test_provenance_of_autograd_ops():
    rw = flow.debug.rewrites(train_session())
    autograd = next(r for r in rw if r.name == "GenerateBackwardAndOptimizerOpConfs")
    assert autograd.added  # the backward ops and the optimizer's
    made = rw.made(autograd.added[-1])
    assert made.name == "GenerateBackwardAndOptimizerOpConfs" and made.job == "train_job"
    assert rw.made("train_job/w").name == "AddTasks"


def test_source_points_at_the_def_of_the_function():
    rw = flow.debug.rewrites(train_session())
    for r in rw:
        path, _, line = r.source.rpartition(":")
        text = (ROOT / path).read_text().splitlines()[int(line) - 1]
        fn = getattr(r.function, "func", r.function)
        assert re.match(rf"\s*def {fn.__name__}\(", text), (r.name, r.source, text)
    sources = {r.name: r.source for r in rw}
    assert sources["GenerateBackwardAndOptimizerOpConfs"].startswith("flowlab/compiler/autograd.py:")
    assert sources["ConnectRegstsAndBoxing"].startswith("flowlab/compiler/plan_builder.py:")
    assert sources["PlanMemory"].startswith("flowlab/compiler/plan_assemble.py:")


def test_printed_table_and_one_rewrite():
    session = relu_session()
    rw = flow.debug.rewrites(session)
    lines = str(rw).splitlines()
    assert lines[0].split() == ["#", "rewrite", "job", "+", "-", "~", "source"]
    assert len(lines) == len(rw) + 1
    assert [line.split()[1] for line in lines[1:]] == [r.name for r in rw]
    connect = next(r for r in rw if r.name == "ConnectRegstsAndBoxing")
    text = str(connect)
    assert text.startswith(f"#{connect.index} ConnectRegstsAndBoxing on the Plan (flowlab/compiler/plan_builder.py:")
    assert f"{len(connect.added)} added, 0 removed, {len(connect.changed)} changed" in text
    assert "  + relu_job/System-Boxing-BoxingCopy-0" in text


def test_a_compile_result_gives_the_same_rewrites():
    session = relu_session()
    result = compile_jobs(list(session.traced_jobs.values()), 2)
    a, b = flow.debug.rewrites(session), flow.debug.rewrites(result)
    assert [(r.name, r.job, r.added, r.removed, r.changed) for r in a] == \
        [(r.name, r.job, r.added, r.removed, r.changed) for r in b]
    with pytest.raises(TypeError, match="takes a session"):
        flow.debug.rewrites(42)


def test_made_in_one_job():
    """An interface op's name is an op of the user job (traced) and of its push job (built): job= picks one."""
    rw = flow.debug.rewrites(relu_session())
    assert rw.made("Input_0").name == "MakePushJob"
    assert rw.made("Input_0", job="System-Push-Input_0").job == "System-Push-Input_0"
    with pytest.raises(KeyError, match="traced job 'relu_job'"):
        rw.made("Input_0", job="relu_job")
    assert rw.made("relu_job/Input_0 [1]").name == "AddTasks"


def test_view_steps_match_the_rewrites():
    from flowlab.notebook.compare import COMPARE_MIME

    rw = flow.debug.rewrites(relu_session())
    view = flow.debug.show_rewrites(flow.default_session(), index=3)
    payload = view.payload
    assert payload["kind"] == "rewrites" and payload["index"] == 3 and len(payload["steps"]) == len(rw)
    assert COMPARE_MIME in view._repr_mimebundle_() and str(rw) in view._repr_mimebundle_()["text/plain"]
    for r, step in zip(rw, payload["steps"]):
        assert (step["name"], step["job"], step["source"]) == (r.name, r.job, r.source)
        assert step["source_line"].startswith("def ")
        want = {"added": len(r.added), "removed": len(r.removed), "changed": len(r.changed)}
        assert step["counts"] == want
        # the compare view's own diff (debug/diff.py, debug/job_diff.py) finds the same things, except that it
        # does not compare a register's consumers (the consuming task is changed in both) and also lists the
        # memory blocks PlanMemory makes
        items = {(i["status"], i["label"] if r.kind == "plan" else i["label"].partition("/")[2])
                 for i in step["compare"]["items"] if i["what"] != "block"}  # a job's op is listed as job/op
        assert {label for status, label in items if status == "added"} == set(r.added), r.name
        assert {label for status, label in items if status == "removed"} == set(r.removed), r.name
        seen = {label for status, label in items if status == "changed"}
        assert seen <= set(r.changed), r.name
        for label in set(r.changed) - seen:
            a, b = r.before.registers[label], r.after.registers[label]
            assert [k for k in range(len(a)) if a[k] != b[k]] == [2], (r.name, label)  # 2: consumers
    with pytest.raises(IndexError, match="outside the rewrites 0..26"):
        rw.show(27)


def test_view_outlines_the_parents_of_added_nodes():
    rw = flow.debug.rewrites(relu_session())
    payload = rw.show().payload
    sink = next(s for s in payload["steps"] if s["name"] == "AutoSinkTick" and s["job"] == "relu_job")
    nodes = {n["label"]: n["classes"] for n in sink["compare"]["b"]["graph"]["nodes"]}
    assert "added" in nodes["System-AutoTick-SinkTick"]
    # the sink tick waits for the Return, the one op nobody in the job consumes
    assert [label for label, classes in nodes.items() if "parent" in classes] == ["Return_0"]
    connect = next(s for s in payload["steps"] if s["name"] == "ConnectRegstsAndBoxing")
    graph = connect["compare"]["b"]["graph"]
    label = {n["id"]: n["label"] for n in graph["nodes"]}
    added = {n["id"] for n in graph["nodes"] if "added" in n["classes"]}
    want = {label[e["source"]] for e in graph["edges"] if e["target"] in added and e["source"] not in added}
    assert {label[n["id"]] for n in graph["nodes"] if "parent" in n["classes"]} == want
    assert "relu_0" in want  # relu's halves feed the boxing task that gathers them
    # which rewrite made each node of the after side
    box = next(n["id"] for n in graph["nodes"] if n["label"] == "System-Boxing-BoxingCopy-0")
    assert connect["made_by"][box] == connect["index"]
    assert payload["made"]["relu_job/System-Boxing-BoxingCopy-0"] == connect["index"]
    assert payload["made"]["relu_job/System-AutoTick-SinkTick"] == sink["index"]  # the op's maker, not its task's


def test_a_slice_shows_its_own_steps():
    rw = flow.debug.rewrites(relu_session())
    plan_only = rw[-7:]
    assert [r.name for r in plan_only] == [r.name for r in rw if r.kind == "plan"]
    assert plan_only.made("relu_job/System-Boxing-BoxingCopy-0").name == "ConnectRegstsAndBoxing"
    payload = plan_only.show().payload
    assert [s["index"] for s in payload["steps"]] == [r.index for r in plan_only]
    # made and made_by say positions in the shown steps
    assert payload["made"]["relu_job/System-Boxing-BoxingCopy-0"] == 1
    assert set(payload["steps"][-1]["made_by"].values()) <= set(range(len(plan_only)))


def test_a_list_numpy_watch_gets_its_pieces_as_a_rewrite():
    """Compile gives a tp.ListNumpy watch its per-device pieces after the passes (compile.watch_pieces): listed
    as WatchPieces, right after the job's last pass, ending at the job as compiled."""
    flow.config.cpu_device_num(2)

    def as_list(y: tp.ListNumpy) -> None:
        pass

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> None:
        with flow.scope.mirrored_view():
            flow.watch(flow.math.square(x), as_list)

    job([np.ones((2, 3), np.float32)] * 2)
    session = flow.default_session()
    rw = flow.debug.rewrites(session)
    (watch,) = [r for r in rw if r.name == "WatchPieces"]
    assert rw[watch.index - 1].name == "InferSbpSignatures" and rw[watch.index - 1].job == "job"
    assert watch.after == next(j for j in session.job_set if j.name == "job")
    (changed,) = watch.changed
    assert watch.after.op(changed).op_type == "foreign_watch"
    assert watch.after.op(changed).attrs["mirrored_parts"] == 2
    assert watch.source.startswith("flowlab/compiler/compile.py:")


def test_one_rewrite_in_the_compare_view():
    from flowlab.notebook.compare import show_diff

    rw = flow.debug.rewrites(relu_session())
    connect = next(r for r in rw if r.name == "ConnectRegstsAndBoxing")
    view = show_diff(connect)
    assert view.payload["labels"] == ["before ConnectRegstsAndBoxing", "after ConnectRegstsAndBoxing"]
    assert view.payload["counts"]["added"] == len(connect.added)
    sink = next(r for r in rw if r.name == "AutoSinkTick")
    assert show_diff(sink).payload["counts"] == {"added": 1, "removed": 0, "changed": 0}
