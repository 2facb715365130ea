"""The debugger widget's time-travel commands (``back``, ``rewind``, ``go_to_writer``): after each, the widget's
state (actors table, memory record) equals tables built from scratch (tests/debug/test_debugger_rows.py's reference),
the
front end's state rebuilt from the updates equals it, and the debugger is where a fresh one stepped as far is."""

from __future__ import annotations

import flowlab as flow
from flowlab.notebook import debugger_widget
from flowlab.notebook.debugger_update import apply_update
from flowlab.notebook.debugger_widget import DebuggerWidget
from flowlab.replay.state import differences, protocol_state
from tests.helpers.debugger_rows import scratch, widget_memory, widget_rows
from tests.helpers.multi_device_variables import batches, define_mixed

COMMANDS = [("step_n", {"n": 40}), ("back", {"n": 3}), ("step", {}), ("rewind", {"to": 10}),
            ("inspect", {"name": "dense1-matmul"}), ("continue", {}), ("go_to_writer", {}),
            ("back", {"n": 1000}), ("go_to_writer", {"name": "dense2-matmul"}), ("rewind", {"to": -1})]


def test_back_rewind_and_go_to_writer_in_the_widget(monkeypatch):
    monkeypatch.setattr(debugger_widget, "MAX_LIFETIMES", 25)
    job = define_mixed("0:0")
    x, y = batches(1)[0]
    job(x, y)
    dbg = flow.debug(job, x, y)
    widget = DebuggerWidget(dbg)
    state, seq = apply_update(None, None, widget.update)
    statuses = []
    for cmd, args in COMMANDS:
        widget.command(cmd, args)
        assert dbg.actor_rows() == scratch(dbg), cmd
        assert widget.state["actors"] == widget_rows(dbg), cmd
        assert widget.state["memory"] == widget_memory(dbg, 25), cmd
        state, seq = apply_update(state, seq, widget.update)
        assert {r["id"]: r for r in state["actors"]} == {r["id"]: r for r in widget.state["actors"]}, cmd
        assert state["memory"] == widget.state["memory"] and state["acts"] == dbg.acts, cmd
        statuses.append((widget.state["status"].split(":")[0], widget.state["error"], dbg.acts))
        fresh = flow.debug(job, x, y)
        fresh.step_n(dbg.acts) if dbg.acts else None
        assert not differences(protocol_state(dbg.runtime), protocol_state(fresh.runtime)), cmd
    writer = statuses[6]
    assert writer[0] == "at the writer of dense1-matmul/out_0; read after it by" and writer[1] is None
    assert statuses[1][2] == 37 and statuses[3][2] == 10 and statuses[7][1].startswith("ValueError: back(n=1000)")
    assert statuses[9][1].startswith("ValueError: rewind(to=-1): the act must be in [0, ")
