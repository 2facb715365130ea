"""Plan payload sections drawn by other views: a hang (``stuck``), checked against the WaitGraph it comes from and
the hand-built defects of tests/helpers/hang_plans.py; the debugger widget draws the hang when a call hangs."""

from __future__ import annotations

import json

import pytest

import flowlab as flow
from flowlab.runtime import Runtime
from tests.helpers.hang_plans import X, call, cycle_plan, task


@pytest.fixture
def hang():
    plan, ctrl = cycle_plan()
    rt = Runtime(plan)
    with pytest.raises(flow.debug.HangError) as err:
        rt.run_call(call([]))
    yield plan, err.value
    flow.clear_default_session()


def test_the_stuck_section_marks_the_cycle_and_every_wait(hang):
    plan, err = hang
    payload = flow.debug.show_stuck(err, plan=plan).payload
    st = json.loads(json.dumps(payload["stuck"]))  # JSON-able
    pad, ret = task(plan, "pad_Job", "reflection_pad2d_0"), task(plan, "pad_Job", "Return_0")
    # the hand-made cycle, and nothing else, is "cycle"
    assert {k for k, a in st["actors"].items() if a["kind"] == "cycle"} == {f"t:{pad.task_id}", f"t:{ret.task_id}"}
    assert sorted(st["cycle"]) == sorted([f"t:{pad.task_id}", f"t:{ret.task_id}"])
    # one edge per (blocked actor, what it waits for); the two between the cycle's actors are flagged
    expected = {(f"t:{b.actor_id}", f"t:{w}") for b in err.graph.blocked for w in b.waits_on}
    assert {(a, b) for a, b, _ in st["edges"]} == expected
    assert {(a, b) for a, b, c in st["edges"] if c} == {(f"t:{pad.task_id}", f"t:{ret.task_id}"),
                                                        (f"t:{ret.task_id}", f"t:{pad.task_id}")}
    # each actor's text is the WaitGraph's line for it; the main job's lock waits for a section
    by_id = {f"t:{b.actor_id}": b for b in err.graph.blocked}
    assert all(a["text"] == str(by_id[k]) for k, a in st["actors"].items())
    lock = next(k for k, a in st["actors"].items() if a["name"] == "System-Main-ReentrantLock_0")
    assert st["actors"][lock]["kind"] == "section"
    assert st["text"] == str(err.graph)
    assert "stuck: " in payload["title"] and all(n in payload["title"] for n in err.graph.cycle)
    assert sum(st["counts"].values()) == len(err.graph.blocked)


def test_a_wait_graph_of_another_plan_is_refused_with_the_reason(hang):
    _plan, err = hang
    import flowlab.typing as tp

    flow.clear_default_session()

    @flow.global_function()
    def other(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return flow.math.relu(x)

    import numpy as np

    other(np.ones(2, np.float32))
    with pytest.raises(KeyError, match="this wait-for graph names task .* the Plan that ran"):
        flow.debug.show_stuck(err)  # the default session's Plan is not the one that hung


def test_show_stuck_says_when_nothing_is_stuck():
    flow.clear_default_session()
    import flowlab.typing as tp

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    pad_Job(X)
    with pytest.raises(ValueError, match="nothing is stuck"):
        flow.debug.show_stuck()


def test_the_debugger_widget_draws_the_hang_when_no_actor_can_act(monkeypatch):
    from flowlab.notebook.debugger_widget import DebuggerWidget

    plan, _ctrl = cycle_plan()  # the pad job compiled in the default session: run its debugger on the edited Plan
    session = flow.default_session()
    monkeypatch.setattr(session, "debug_runtime", lambda: Runtime(plan))  # same task ids, one edge more
    desc = session.function_descs["pad_Job"]
    from flowlab.debug import Debugger

    dbg = Debugger(session, desc, (X,), {})
    widget = DebuggerWidget(dbg)
    assert "stuck" not in widget.payload
    widget.continue_()  # runs until no actor can act: the call hangs on the cycle
    assert not dbg.finished
    stop = widget.state["stop"]  # the stop panel says the call hangs, not that it finished
    assert stop["reason"] == "stuck" and "deadlock: a cycle of waits" in stop["text"], stop
    st = widget.payload["stuck"]
    graph = dbg.why_stuck()
    assert sorted(st["cycle"]) == sorted(f"t:{i}" for i in graph.cycle_ids) and len(st["cycle"]) == 2
    assert widget.state["status"].startswith("stuck:") and "deadlock: a cycle of waits" in widget.state["status"]
    widget.restart()  # a fresh run: nothing stuck, the plain Plan again
    assert "stuck" not in widget.payload
    flow.clear_default_session()


def test_provenance_names_the_rewrite_that_made_each_task_and_its_op():
    import numpy as np

    import flowlab.typing as tp

    flow.clear_default_session()

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3, 2), initializer=flow.constant_initializer(0.5))
        loss = flow.math.reduce_mean(flow.matmul(x, w))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    train_job(np.ones((4, 3), np.float32))
    session = flow.default_session()
    rw = flow.debug.rewrites(session)
    pv = flow.debug.show_provenance(session).payload["provenance"]
    order = list(rw)
    plan = session.plan
    for t in plan.tasks:  # each task: the rewrite rw.made finds for its name (job/op, [parallel id] past the first)
        label = f"{plan.job_names[t.job_id]}/{t.name}" + (f" [{t.parallel_id}]" if t.parallel_id else "")
        assert pv["made_by"][f"t:{t.task_id}"] == order.index(rw.made(label)), label
    grad = next(t for t in plan.tasks if t.name == "matmul_1")
    at, node = pv["op_made"][f"t:{grad.task_id}"]
    assert order[at] is rw.made("matmul_1", job="train_job")
    assert order[at].name == "GenerateBackwardAndOptimizerOpConfs"
    step = pv["rewrites"]["steps"][at]["compare"]["b"]["graph"]
    assert next(n for n in step["nodes"] if n["id"] == node)["label"] == "matmul_1"
    user = next(t for t in plan.tasks if t.name == "matmul_0")  # traced from the user's code: no op rewrite
    assert f"t:{user.task_id}" not in pv["op_made"]
    flow.clear_default_session()


def test_the_schedule_section_is_the_captured_schedule_on_the_plan():
    from flowlab.viz.payload_devices import lane_names
    from tests.helpers.schedule_jobs import called

    job = called(devices=1, times=10)  # FUSE_AFTER (8) replays: its schedule is fused
    session = flow.default_session()
    ir = session.schedule_of(job)
    payload = flow.debug.show_schedule(session, job).payload
    sd = json.loads(json.dumps(payload["schedule"]))
    assert sd["execution"] == str(session.execution)
    first = sd["schedules"][0]
    assert [s["node"] for s in first["steps"]] == [f"t:{s.task_id}" for s in ir.steps]
    nodes = {n["id"]: n["label"] for n in payload["graph"]["nodes"]}
    assert [nodes[s["node"]] for s in first["steps"]] == [s.name for s in ir.steps]  # each step's task is its own
    assert first["segments"] == [list(seg) for seg in ir.segments] and len(first["segments"]) >= 1
    assert first["runs_on"] in ("fused", "callgen") and first["lanes"] == []
    job2 = called(devices=2, times=2)
    session = flow.default_session()
    sd = flow.debug.show_schedule(job2).payload["schedule"]  # the default session
    ir = session.schedule_of(job2)
    names = lane_names(session.plan.tasks)
    lanes = sd["schedules"][0]["lanes"]
    assert [(tuple(lane["thread"]), lane["steps"]) for lane in lanes] == [(k, list(ix)) for k, ix in ir.lanes]
    assert [lane["label"] for lane in lanes] == [names[k] for k, _ in ir.lanes] and len(lanes) == 2
    flow.clear_default_session()


def test_a_function_with_no_schedule_says_why():
    import flowlab.typing as tp

    flow.clear_default_session()
    with flow.flags(replay=False):
        @flow.global_function()
        def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
            return flow.reflection_pad2d(x, padding=1)

        pad_Job(X)
    with pytest.raises(ValueError, match="(?s)pad_Job has no captured Schedule yet.*flag replay=off"):
        flow.debug.show_schedule(pad_Job)
    flow.clear_default_session()


def test_the_plan_browser_offers_the_schedule_beside_the_plan():
    from flowlab.notebook.widgets import PlanBrowser
    from tests.helpers.schedule_jobs import called

    job = called(devices=2, times=1)
    browser = PlanBrowser(flow.default_session())
    assert "schedule" not in browser.views
    browser.show_schedule(job)
    assert browser.views[-1] == "schedule" and browser.view == "schedule"
    assert len(browser.payload["schedule"]["schedules"][0]["lanes"]) == 2
    browser.show("plan")
    assert "schedule" not in browser.payload
    flow.clear_default_session()


def test_the_static_picture_fills_the_stuck_boxes_as_the_view_does(hang):
    import re
    from pathlib import Path

    from flowlab.viz.payload_sections import STUCK_FILLS
    from flowlab.viz.payload_svg import payload_svg

    plan, err = hang
    view = flow.debug.show_stuck(err, plan=plan)
    ts = (Path(__file__).resolve().parents[2] / "extension" / "src" / "stuck.ts").read_text()
    for kind, fill in STUCK_FILLS.items():  # the same colours as the live view's
        assert re.search(rf'{kind}: {{ fill: "{fill}"', ts), kind
    svg = payload_svg(view.payload, id_prefix="p-")
    # the cycle's colour is in the picture (on the cycle's boxes, or the collapsed job holding them)
    assert STUCK_FILLS["cycle"] in svg.lower()


def test_an_actor_waiting_for_another_machine_is_of_kind_machine(hang):
    """A hand-made graph on a Plan whose Return_0 runs on machine 1: reflection_pad2d_0 (machine 0) waits for it."""
    import dataclasses

    from flowlab.runtime.hang import Blocked, WaitGraph

    plan, _err = hang
    pad, ret = task(plan, "pad_Job", "reflection_pad2d_0"), task(plan, "pad_Job", "Return_0")
    moved = dataclasses.replace(plan, tasks=tuple(dataclasses.replace(t, machine_id=1) if t is ret else t
                                                  for t in plan.tasks))
    graph = WaitGraph((Blocked(pad.name, pad.task_id, 0, 0, 1, "waits for register r3 from Return_0",
                               (ret.name,), True, (ret.task_id,), "pad_Job"),),
                      pending=("pad_Job",), silent=("machine 1 (127.0.0.2)",))
    st = flow.debug.show_stuck(graph, plan=moved).payload["stuck"]
    assert st["actors"][f"t:{pad.task_id}"]["kind"] == "machine"
    assert st["edges"] == [[f"t:{pad.task_id}", f"t:{ret.task_id}", False]]
    assert st["silent"] == ["machine 1 (127.0.0.2)"] and st["counts"]["machine"] == 1


HANGING_CELL = """
import flowlab as flow
import flowlab.typing as tp
from tests.helpers.hang_plans import X, leak

with flow.flags(replay=False):  # the replay layer would perform the calls past the patched actor
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    pad_Job(X)
    leak(flow.default_session().runtime, "Return_0", "pad_Job")
    pad_Job(X)
    pad_Job(X)
"""


def test_a_flowjob_cell_whose_call_hangs_draws_the_hang_on_its_plan():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    try:
        ip.run_line_magic("load_ext", "flowlab")
        result = ip.run_cell_magic("flowjob", "", HANGING_CELL)
    finally:
        InteractiveShell.clear_instance()
    assert isinstance(result.error, flow.debug.HangError)
    st = result.payloads()["plan"]["stuck"]
    assert sorted(st["cycle"]) == sorted(f"t:{i}" for i in result.error.graph.cycle_ids) and len(st["cycle"]) == 2
    assert "was taken and never returned" in st["text"]
    flow.clear_default_session()
