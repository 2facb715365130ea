"""The DebuggerWidget driven through its message handler and methods, checked through its ``state`` trait."""

from __future__ import annotations

import json

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.notebook.debugger_widget import DebuggerWidget

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)


@pytest.fixture
def widget():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    return DebuggerWidget(flow.debug(pad_Job, X))


def send(widget, cmd, **args):
    widget._on_msg(widget, {"type": "command", "cmd": cmd, "args": args}, [])
    return widget.state


def task_id(op, job="pad_Job"):
    plan = flow.default_session().plan
    return next(t.task_id for t in plan.tasks if t.name == op and plan.job_names[t.job_id] == job)


def test_initial_state_and_payload(widget):
    state = widget.state
    assert widget.payload["flowlab_payload"] == 1 and widget.payload["kind"] == "plan"
    assert {n["id"] for n in widget.payload["graph"]["nodes"]} >= {f"t:{task_id('reflection_pad2d_0')}"}
    assert state["error"] is None and state["acts"] == 0 and not state["finished"]
    assert state["next_actor"] == "System-Main/System-Main-WaitAndSendIds_0"
    assert state["next_node"] == f"t:{task_id('System-Main-WaitAndSendIds_0', 'System-Main')}"
    assert len(state["actors"]) == state["actors_total"] == len(flow.default_session().plan.tasks)
    row = next(a for a in state["actors"] if a["name"] == "pad_Job/reflection_pad2d_0")
    assert set(row) >= {"id", "name", "job", "state", "why_blocked", "acts"} and row["state"] == "blocked"
    assert state["breakpoints"] == [] and state["inspected"] is None and state["stop"] is None
    assert {"blocks", "lifetimes"} <= set(state["memory"])
    json.dumps(state, allow_nan=False)


def test_a_bad_command_shows_its_error_once_then_clears(widget):
    state = send(widget, "inspect", name="Input_0/y_0")  # the typo of the evaluation
    assert state["error"].startswith("KeyError: no blob 'Input_0/y_0'; did you mean Input_0/out?")
    assert state["inspected"] is None
    state = send(widget, "step")
    assert state["error"] is None and state["status"].startswith("acted: #0 System-Main-WaitAndSendIds_0")
    state = send(widget, "inspect", name="reflection_pad2d_0/y_0")
    assert state["error"] is None and state["inspected"]["lbn"] == "reflection_pad2d_0/y_0"
    assert state["inspected"]["written"] is False  # not yet written says so
    state = send(widget, "inspect", name="nope")
    assert state["error"] and state["inspected"]["lbn"] == "reflection_pad2d_0/y_0"  # the last good one stays
    state = send(widget, "run_to", target=f"t:{task_id('Return_0')}")
    assert state["error"] is None and state["status"].startswith("reached pad_Job/Return_0")
    inspected = state["inspected"]
    assert inspected["written"] and inspected["stats"]["min"] == 0.0 and inspected["stats"]["max"] == 17.0
    assert sum(inspected["histogram"]["counts"]) == 50 and len(inspected["values"]) == 50
    assert send(widget, "frobnicate")["error"].startswith("ValueError: unknown command 'frobnicate'")
    assert send(widget, "step")["error"] is None


def test_breakpoints_round_trip(widget):
    send(widget, "break", kind="nan")
    send(widget, "break", kind="inf", target="reflection_pad2d_0/y_0")
    send(widget, "break", kind="op", target="Return_0")
    send(widget, "break", kind="job", target="System-Pull-Return_0")
    send(widget, "break", kind="blob", target="Return_0/out")
    send(widget, "break", kind="actor", target=f"t:{task_id('Return_0')}")
    state = send(widget, "break", kind="predicate", target="reflection_pad2d_0/y_0: np.abs(x).max() > 1e3")
    assert state["error"] is None
    assert [(b["id"], b["kind"], b["target"]) for b in state["breakpoints"]] == [
        (1, "nan", None), (2, "inf", "reflection_pad2d_0/y_0"), (3, "op", "Return_0"),
        (4, "job", "System-Pull-Return_0"), (5, "blob", "Return_0/out"), (6, "actor", "pad_Job/Return_0"),
        (7, "predicate", "reflection_pad2d_0/y_0")]
    assert state["breakpoints"][6]["text"] == ("after an act writes blob reflection_pad2d_0/y_0 and "
                                               "(np.abs(x).max() > 1e3)(values) is true")
    assert send(widget, "break", kind="op")["error"] == "ValueError: a op breakpoint needs a target (op name)"
    assert send(widget, "break", kind="predicate", target="x >")["error"].startswith("SyntaxError")
    state = send(widget, "unbreak", id=3)
    assert [b["id"] for b in state["breakpoints"]] == [1, 2, 4, 5, 6, 7] and state["error"] is None
    assert send(widget, "unbreak", id=3)["error"].startswith("KeyError: no breakpoint 3")
    state = send(widget, "continue")
    assert state["stop"]["reason"] == "breakpoint" and state["stop"]["breakpoint"] == 6
    assert state["next_actor"] == "pad_Job/Return_0"


def test_a_nan_stop_names_the_producer_and_shows_its_blob(widget):
    send(widget, "break", kind="nan")
    send(widget, "run_to", target="pad_Job/reflection_pad2d_0")
    state = send(widget, "inject", name="Input_0/out", value=float("nan"))
    assert state["inspected"]["stats"]["nan"] == 18 and state["inspected"]["stats"]["min"] is None
    state = send(widget, "continue")
    stop = state["stop"]
    pad = widget.dbg.plan.task("reflection_pad2d_0")
    assert (stop["op"], stop["lbn"], stop["nan"], stop["inf"]) == ("reflection_pad2d_0", "reflection_pad2d_0/y_0",
                                                                   50, 0)
    assert stop["regst"] == f"r:{pad.produced_regst_desc['out'].regst_desc_id}" and stop["node"] == f"t:{pad.task_id}"
    assert state["next_actor"] == "pad_Job/Return_0"  # next is next; the culprit is in stop
    assert state["inspected"]["lbn"] == "reflection_pad2d_0/y_0" and state["inspected"]["values"][:2] == ["NaN"] * 2
    json.dumps(state, allow_nan=False)


def test_finish_restart_and_step_n(widget):
    state = send(widget, "step_n", n=3)
    assert state["acts"] == 3 and state["status"].startswith("steps after 3 acts")
    state = send(widget, "continue")
    assert state["finished"] and state["next_node"] is None and state["status"].startswith("finished")
    assert send(widget, "step")["error"].startswith("RunFinished: the run is finished")
    state = send(widget, "restart")
    assert state["acts"] == 0 and not state["finished"] and state["error"] is None and state["stop"] is None
    send(widget, "run_to", target="pad_Job/Input_0")
    state = send(widget, "run_to_end_of_job")
    assert state["status"].startswith("job finished") and state["error"] is None and not state["finished"]


def test_methods_are_the_same_commands(widget):
    widget.break_("nan")
    widget.run_to("pad_Job/reflection_pad2d_0")
    widget.inspect(f"t:{task_id('reflection_pad2d_0')}")
    assert widget.state["inspected"]["lbn"] == "reflection_pad2d_0/y_0"
    widget.unbreak(1)
    widget.continue_()
    assert widget.state["finished"] and widget.state["breakpoints"] == []
    np.testing.assert_array_equal(widget.dbg.result, np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    text = widget._repr_mimebundle_()
    data = text[0] if isinstance(text, tuple) else text
    assert data["text/plain"].startswith("<DebuggerWidget pad_Job:")


def test_inject_takes_a_number_or_an_expression_of_x_and_a_bad_one_errors_once(widget):
    """The view's inject control sends the text the user typed: a number (also nan/inf) fills the blob, anything
    else is an expression of the current values ``x`` with ``np``, as ``dbg.inject(name, array)`` takes."""
    send(widget, "run_to", target="pad_Job/reflection_pad2d_0")
    before = widget.dbg.value("Input_0/out")
    state = send(widget, "inject", name="Input_0/out", value="np.where(x > 8, 0, x) * 2")
    assert state["error"] is None and state["inspected"]["lbn"] == "Input_0/out"
    np.testing.assert_array_equal(widget.dbg.value("Input_0/out"), np.where(before > 8, 0, before) * 2)
    assert "np.where(x > 8, 0, x) * 2" in state["status"]
    state = send(widget, "inject", name="Input_0/out", value="-inf")
    assert state["inspected"]["stats"]["inf"] == 18
    state = send(widget, "inject", name="Input_0/out", value="x[0]")  # wrong shape: says both shapes
    assert state["error"].startswith("ValueError: inject") and "[2, 1, 3, 3]" in state["error"]
    assert send(widget, "inject", name="Input_0/out", value="x +")["error"].startswith("SyntaxError")
    assert send(widget, "inject", name="", value="1")["error"].startswith("ValueError: inject needs a blob")
    state = send(widget, "inspect", name="Input_0/out")
    assert state["error"] is None and state["inspected"]["stats"]["inf"] == 18  # the bad ones changed nothing
    state = send(widget, "continue")  # the acts after the injection read it
    assert state["finished"] and np.isneginf(widget.dbg.result).all()


def test_the_act_view_names_the_last_act_and_its_kernel_tier(widget):
    assert widget.state["last_act"] is None  # no act yet: the front end hides the act view
    state = send(widget, "run_to", target="pad_Job/reflection_pad2d_0")
    state = send(widget, "step")
    act = state["last_act"]
    assert (act["actor"], act["job"], act["index"]) == ("reflection_pad2d_0", "pad_Job", state["acts"] - 1)
    assert act["tier"] == "reference"  # flow.debug before any call runs the session's first: the reference tier
    assert act["writes"] and act["node"] == f"t:{task_id('reflection_pad2d_0')}"
    json.dumps(state, allow_nan=False)


def test_a_tiered_run_records_the_reference_tier_first(monkeypatch):
    monkeypatch.setenv("FLOWLAB_KERNELS", "reference")  # the tier a tiered kernel starts on, pinned

    @flow.global_function()
    def relu_Job(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        return flow.math.relu(x)

    w = DebuggerWidget(flow.debug(relu_Job, np.arange(4, dtype=np.float32)))
    state = send(w, "run_to_end_of_job")
    relu = [a for a in w.dbg.recorder.acts if a["actor"].endswith("relu_0")]
    assert relu and relu[-1]["tier"] == "reference"
    assert state["last_act"]["tier"] == w.dbg.recorder.acts[-1].get("tier")


def test_the_first_breakpoint_after_a_run_to_is_number_one(widget):
    send(widget, "run_to", target="pad_Job/reflection_pad2d_0")  # run_to's own breakpoint is not the user's #1
    state = send(widget, "break", kind="nan")
    assert [b["id"] for b in state["breakpoints"]] == [1]


def test_export_trace_sends_the_recorded_acts_as_trace_json(widget, monkeypatch):
    sent = []
    monkeypatch.setattr(widget, "send", lambda msg, buffers=None: sent.append(msg))
    send(widget, "step_n", n=5)
    state = send(widget, "export_trace")
    assert state["error"] is None and len(sent) == 1
    msg = json.loads(json.dumps(sent[0], allow_nan=False))  # what the comm carries: plain JSON
    assert msg["type"] == "trace" and msg["name"] == "pad_Job-trace.json"
    acts = [e for e in msg["trace"]["traceEvents"] if e["ph"] == "X"]
    assert [e["args"]["seq"] for e in acts] == list(range(5)) == list(range(state["acts"]))
