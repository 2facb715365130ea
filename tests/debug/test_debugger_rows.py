"""The actors table and the memory record are rebuilt only where they moved (live_state.py ``actor_rows``,
notebook/debugger_tables.py): after every command of a stepped session, on one device and on two, the rows, the
lifetimes and the debugger widget's state equal tables built from scratch with the rule the debugger always used,
and a step rebuilds a few rows, not all of them."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
from flowlab.debug.debugger import Debugger
from flowlab.notebook import debugger_widget
from flowlab.notebook.debugger_update import apply_update
from flowlab.notebook.debugger_widget import DebuggerWidget
from tests.helpers.debugger_rows import scratch, widget_memory, widget_rows
from tests.helpers.multi_device_variables import batches, define_mixed

COMMANDS = ([("step", {})] * 12 + [("step_n", {"n": 7}), ("inspect", {"name": "dense1-matmul"}),
            ("inject", {"name": "dense1-matmul", "value": 0.5}), ("step", {}), ("break", {"kind": "op",
            "target": "dense2-matmul"}), ("continue", {}), ("unbreak", {"id": 1}), ("run_to_end_of_job", {}),
            ("step_n", {"n": 5}), ("restart", {}), ("step", {}), ("step_n", {"n": 30}), ("continue", {}),
            ("step", {})])  # the last: on a finished run, an error shown in the state


@pytest.mark.parametrize("devices, cpus", [("0:0", 1), ("0:0-1", 2)])
def test_the_kept_rows_equal_rows_built_from_scratch_after_every_command(devices, cpus, monkeypatch):
    monkeypatch.setattr(debugger_widget, "MAX_LIFETIMES", 25)  # the window moves on as the run goes
    flow.config.cpu_device_num(cpus)
    job = define_mixed(devices)
    x, y = batches(1)[0]
    job(x, y)  # compiled, variables initialized
    dbg = flow.debug(job, x, y)
    widget = DebuggerWidget(dbg)
    state, seq = apply_update(None, None, widget.update)
    built = []
    for cmd, args in COMMANDS:
        before = list(dbg.actor_rows())
        widget.command(cmd, args)
        assert dbg.actor_rows() == scratch(dbg), cmd
        assert [r.name.endswith("<- next") for r in dbg.actors()] == [
            a is dbg.runtime.peek() and not dbg.finished for a in dbg.runtime.actors.values()]
        assert widget.state["actors"] == widget_rows(dbg), cmd
        assert widget.state["memory"] == widget_memory(dbg, 25), cmd
        state, seq = apply_update(state, seq, widget.update)
        assert {r["id"]: r for r in state["actors"]} == {r["id"]: r for r in widget.state["actors"]}, cmd
        if cmd == "step":
            built.append(sum(a is not b for a, b in zip(before, dbg.actor_rows())))
    assert widget.state["finished"] and "finished" in (widget.state["error"] or "")
    # A step moves one actor, its consumers and its producers: a few rows, each new object, the rest kept.
    assert 0 < max(built) <= 12 < len(dbg.runtime.actors), built


def test_rows_follow_what_moves_outside_an_act():
    """A launch fills the wait buffer of the main job's source (no act of the job's own actors), a restart makes a new
    runtime: the rows show both, as built from scratch."""
    job = define_mixed("0:0")
    x, y = batches(1)[0]
    job(x, y)
    dbg = flow.debug(job, x, y)
    dbg.continue_()
    assert dbg.actor_rows() == scratch(dbg)
    runtime = dbg.runtime
    dbg.restart()
    assert dbg.runtime is not runtime and dbg.actor_rows() == scratch(dbg)
    assert all(r.acts == 0 for r in dbg.actor_rows())
    dbg.runtime.actors[next(iter(dbg.runtime.actors))].state = "zombie"  # a state change no act made
    assert dbg.actor_rows() == scratch(dbg)


def test_a_full_build_after_a_session_of_steps_is_the_kept_table():
    job = define_mixed("0:0")
    x, y = batches(1)[0]
    job(x, y)
    dbg = Debugger(flow.default_session(), flow.default_session().function_descs["train_job"], (x, y), {})
    for _ in range(40):
        dbg.step()
    kept = dbg.actor_rows()
    assert dbg.actor_rows(full=True) == kept == scratch(dbg)
    np.testing.assert_equal(len(kept), len(dbg.runtime.actors))
