"""The step debugger's Python API, with exact expectations on the seed job."""

from __future__ import annotations

import json
import os
import signal
import threading

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.debug import RunFinished

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)
PADDED = np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect")


@pytest.fixture
def pad_job():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    return pad_Job


def test_stepping_runs_the_same_acts_as_a_normal_call(pad_job):
    dbg = flow.debug(pad_job, X)
    assert dbg.next_actor() == "System-Main/System-Main-WaitAndSendIds_0"
    names = []
    while not dbg.finished:
        names.append(dbg.step().actor_name)
    np.testing.assert_array_equal(dbg.result, PADDED)
    # The same Plan, launched the same way, in a plain Runtime: the same act sequence.
    from flowlab.runtime import JobInstance, Runtime

    rt = Runtime(flow.default_session().plan)
    instances = [JobInstance("System-Push-Input_0", push_array=X), JobInstance("pad_Job"),
                 JobInstance("System-Pull-Return_0", on_pull=lambda a: None)]
    for instance in instances:
        rt.launch(instance)
    plain = []
    while not instances[-1].finished:  # where a normal call stops (Session._run_jobs)
        plain.append(rt.step().actor_name)
    assert names == plain


def test_step_shows_blob_values_after_each_act(pad_job):
    dbg = flow.debug(pad_job, X)
    stop = dbg.run_to("pad_Job/reflection_pad2d_0")
    assert stop.reason == "reached" and stop.next_actor == "pad_Job/reflection_pad2d_0"
    np.testing.assert_array_equal(dbg.value("pad_Job/Input_0"), X)  # pushed into the shared block
    before = dbg.value("reflection_pad2d_0/y_0")
    event = dbg.step()
    assert event.actor_name == "reflection_pad2d_0"
    np.testing.assert_array_equal(dbg.value("reflection_pad2d_0/y_0"), PADDED)
    assert not np.array_equal(before, PADDED)
    stats = dbg.blob("reflection_pad2d_0/y_0")
    assert (stats.min, stats.max, stats.nan_count) == (0.0, 17.0, 0)
    assert stats.mean == pytest.approx(float(PADDED.mean())) and stats.std == pytest.approx(float(PADDED.std()))
    assert sum(stats.histogram[1]) == PADDED.size


def test_pull_actor_is_blocked_until_the_user_job_finished(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.run_to("pad_Job/Return_0")
    rows = {row.name.split("  ")[0]: row for row in dbg.actors()}
    pull = rows["System-Pull-Return_0/System-Pull-Return_0-ForeignOutput"]
    assert pull.state == "blocked" and pull.reason.startswith("waiting for register r")
    assert pull.reason.endswith("from Return_0")
    assert rows["pad_Job/reflection_pad2d_0"].acts == 1
    assert any(row.name.endswith("<- next") and row.name.startswith("pad_Job/Return_0") for row in dbg.actors())


def test_nan_breakpoint_fires_on_the_act_that_produced_it(pad_job):
    dbg = flow.debug(pad_job, X)
    bp = dbg.break_on(nan=True)
    dbg.run_to("pad_Job/reflection_pad2d_0")
    poisoned = X.copy()
    poisoned[1, 0, 1, 1] = np.nan  # output rows and cols map to input [1, 0, 1, 2, 1]: the centre shows 3x3 times
    dbg.inject("pad_Job/Input_0/out", poisoned)
    stop = dbg.continue_()
    assert stop.breakpoint is bp and stop.event.actor_name == "reflection_pad2d_0"
    assert dbg.blob("reflection_pad2d_0/y_0").nan_count == 9
    dbg.clear_breakpoints()
    assert dbg.continue_().reason == "finished"
    assert np.isnan(dbg.result).sum() == 9


def test_injection_changes_what_runs_next(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.run_to("pad_Job/reflection_pad2d_0")
    dbg.inject("Input_0/out", X * 2)
    dbg.continue_()
    np.testing.assert_array_equal(dbg.result, PADDED * 2)
    np.testing.assert_array_equal(pad_job(X), PADDED)  # the session itself is untouched


def test_predicate_breakpoint_and_job_breakpoint(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.break_on(predicate=lambda a: a.size == 50 and a.max() == 17, blob="Return_0/out")
    stop = dbg.continue_()
    assert stop.event.actor_name == "Return_0" and stop.event.job_id == 0
    dbg.clear_breakpoints()
    dbg.break_on(job="System-Pull-Return_0")
    stop = dbg.continue_()
    assert stop.next_actor == "System-Pull-Return_0/Return_0"


def test_run_to_end_of_job_and_step_n(pad_job):
    dbg = flow.debug(pad_job, X)
    stop = dbg.step_n(4)
    assert stop.reason == "steps" and dbg.acts == 4
    dbg.run_to("pad_Job/Input_0")
    stop = dbg.run_to_end_of_job()
    assert stop.reason == "job finished" and stop.event.task_type == "CallbackNotify"
    assert dbg.runtime.actor("Return_0").act_id == 1 and not dbg.finished


def test_stepping_a_finished_run_says_so_and_restart_runs_again(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.continue_()
    with pytest.raises(RunFinished, match=r"the run is finished \(\d+ acts\); restart\(\) runs it again"):
        dbg.step()
    dbg.restart()
    assert dbg.acts == 0 and not dbg.finished
    dbg.continue_()
    np.testing.assert_array_equal(dbg.result, PADDED)


def test_unknown_breakpoint_targets_say_what_exists(pad_job):
    dbg = flow.debug(pad_job, X)
    with pytest.raises(KeyError, match="no op 'pad'; ops are: .*reflection_pad2d_0"):
        dbg.break_on(op="pad")
    with pytest.raises(KeyError, match="no actor 'pad_Job/nope'; actors are: .*pad_Job/reflection_pad2d_0"):
        dbg.run_to("pad_Job/nope")
    with pytest.raises(KeyError, match="no job 'other'; jobs are: pad_Job"):
        dbg.break_on(job="other")
    with pytest.raises(ValueError, match="exactly one of"):
        dbg.break_on(op="reflection_pad2d_0", nan=True)


def test_trace_export_is_chrome_trace_json(pad_job, tmp_path):
    dbg = flow.debug(pad_job, X)
    dbg.continue_()
    path = dbg.export_trace(tmp_path / "trace.json")
    trace = json.loads(path.read_text())
    acts = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(acts) == dbg.acts and [e["args"]["seq"] for e in acts] == list(range(dbg.acts))
    pad = next(e for e in acts if e["name"] == "reflection_pad2d_0")
    assert pad["tid"] == 0 and pad["args"]["job"] == "pad_Job" and pad["dur"] > 0
    assert all(a["ts"] <= b["ts"] for a, b in zip(acts, acts[1:]))


def test_interrupt_stops_between_acts_and_resumes(pad_job):
    dbg = flow.debug(pad_job, X)
    fired = []

    def interrupt(event):  # send SIGINT from inside the 5th act, as a kernel interrupt would arrive
        if event.seq == 4 and not fired:
            fired.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    dbg.runtime.hooks.append(interrupt)
    assert threading.current_thread() is threading.main_thread()
    stop = dbg.continue_()
    assert stop.reason == "interrupted" and dbg.acts == 5
    dbg.runtime.hooks.clear()
    assert dbg.continue_().reason == "finished"
    np.testing.assert_array_equal(dbg.result, PADDED)


def test_html_export_is_self_contained_and_inert(tmp_path):
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1, name='pad<script>alert("x")</script>&')

    dbg = flow.debug(job, X)
    dbg.continue_()
    text = dbg.export_html(tmp_path / "run.html").read_text()
    assert "<script" not in text and "&lt;script&gt;" in text
    assert text.count("<tr><td>") == dbg.acts  # one row per act
    assert "min 0 max 17" in text and "finished" in text and "<svg" in text
    import xml.etree.ElementTree as ET

    ET.fromstring(text.split("<h2>Plan</h2>", 1)[1].split("<h2>Acts</h2>")[0])  # the embedded SVG is well formed


def test_the_first_user_breakpoint_is_number_one_after_a_run_to(pad_job):
    # run_to adds a temporary breakpoint of its own; it must not take the numbers the user sees (#1, #2, ...)
    dbg = flow.debug(pad_job, X)
    dbg.run_to("pad_Job/reflection_pad2d_0")
    first = dbg.break_on(nan=True)
    dbg.run_to("pad_Job/Return_0")
    second = dbg.break_on(inf=True)
    assert (first.id, second.id) == (1, 2)
    assert str(dbg.breakpoints).splitlines()[0].startswith("breakpoint 1 [nan]")
