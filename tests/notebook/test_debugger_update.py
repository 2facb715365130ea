"""A debugger step sends what changed, not the world (debugger_update.py): the bytes the comm carries per step of the
30-layer MLP train job, and the updates applied in order give the kernel's whole state after every command."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.debug.debugger import Debugger
from flowlab.notebook import debugger_widget
from flowlab.notebook.debugger_update import apply_update
from flowlab.notebook.debugger_widget import DebuggerWidget

KIB = 1024
MODULE = Path(__file__).resolve().parents[2] / "flowlab" / "notebook" / "static" / "flowlab_widget.js"
APPLY = """
import { readFileSync } from "node:fs";
const [mod, file] = process.argv.slice(2);
const { StateStore } = await import(mod);
const store = new StateStore();
const states = [];
for (const u of JSON.parse(readFileSync(file, "utf8"))) {
  if (!store.apply(u)) throw new Error(`update ${u.seq} on ${u.base} refused at ${store.seq}`);
  states.push(store.state);
}
console.log(JSON.stringify(states));
"""


class Wire:
    """Every synced trait change of a widget, as ipywidgets sends it (the JSON of ``get_state(name)``)."""

    def __init__(self, widget: DebuggerWidget) -> None:
        self.widget, self.messages = widget, []
        synced = [name for name in widget.trait_names() if widget.trait_metadata(name, "sync")]
        widget.observe(self._sent, names=synced)

    def _sent(self, change) -> None:
        self.messages.append((change["name"], len(json.dumps(self.widget.get_state(change["name"]),
                                                              separators=(",", ":")))))

    def take(self) -> int:
        """Bytes sent since the last take."""
        total, self.messages = sum(n for _, n in self.messages), []
        return total


def rows_by_id(state):
    return {row["id"]: row for row in state["actors"]}


def same(got, want):
    """The state the front end rebuilt is the kernel's: every field, the actor rows by id (a delta appends a row
    that came into view at the end; the table sorts its rows anyway)."""
    assert rows_by_id(got) == rows_by_id(want) and len(got["actors"]) == len(want["actors"])
    assert {k: v for k, v in got.items() if k != "actors"} == {k: v for k, v in want.items() if k != "actors"}


@pytest.fixture(scope="module")
def deep():
    from tests.helpers.deep_mlp import build_deep_mlp

    session = build_deep_mlp()
    desc = session.function_descs["deep_train"]
    x = np.random.RandomState(0).randn(50, 64).astype(np.float32)
    return DebuggerWidget(Debugger(session, desc, (x, np.arange(50, dtype=np.int32) % 10), {}))


def test_a_step_of_the_30_layer_job_sends_a_few_kib_and_rebuilds_the_whole_state(deep):
    state, seq = apply_update(None, None, deep.update)
    assert deep.update["base"] is None and len(state["actors"]) == state["actors_total"] == 754
    same(state, deep.state)
    wire = Wire(deep)
    sizes = []
    for cmd in ["step"] * 20 + ["step_n", "inspect", "step", "run_to", "step"]:
        if cmd == "step_n":
            deep.step_n(25)
        elif cmd == "inspect":
            deep.inspect("fc3-matmul")
        elif cmd == "run_to":
            deep.run_to("deep_train/fc10-matmul")
        else:
            deep.step()
        sizes.append(wire.take())
        assert deep.update["base"] == seq, "every step is a delta on the last update"
        state, seq = apply_update(state, seq, deep.update)
        same(state, deep.state)
    whole = len(json.dumps(deep.state, separators=(",", ":")))
    assert whole > 150 * KIB  # what every step used to send
    assert max(sizes) <= 20 * KIB, sizes
    assert sorted(sizes)[len(sizes) // 2] <= 4 * KIB, sizes


def test_the_built_front_end_rebuilds_the_30_layer_jobs_state_from_its_updates(deep, tmp_path):
    """The real front-end code (flowlab_widget.js, in Node) applies the kernel's updates, steps and a restart included,
    and holds the kernel's whole state after each."""
    if not shutil.which("node"):
        pytest.skip("node is not on PATH: the built front end needs Node 20")
    deep.resync()
    updates, states = [deep.get_state("update")["update"]], [deep.state]
    for cmd, args in [("step", {})] * 6 + [("step_n", {"n": 40}), ("inspect", {"name": "fc0-matmul"}),
                                           ("restart", {}), ("step", {}), ("step", {})]:
        deep.command(cmd, args)
        updates.append(deep.get_state("update")["update"])  # the JSON the comm carries
        states.append(deep.state)
    (tmp_path / "updates.json").write_text(json.dumps(updates))
    (tmp_path / "apply.mjs").write_text(APPLY)
    out = subprocess.run(["node", str(tmp_path / "apply.mjs"), MODULE.as_uri(), str(tmp_path / "updates.json")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert len(got) == len(states)
    for front, kernel in zip(got, states):
        same(front, json.loads(json.dumps(kernel)))


def test_restart_and_resync_send_the_whole_state_and_a_missed_delta_is_refused(deep):
    deep.step()
    missed = deep.update
    deep.step()
    with pytest.raises(ValueError, match=r"applies on \d+, the state is at \d+"):
        apply_update({"actors": [], "memory": {}}, missed["seq"] - 1, deep.update)
    deep._on_msg(deep, {"type": "resync"}, [])  # what the front end sends then
    assert deep.update["base"] is None
    same(apply_update(None, None, deep.update)[0], deep.state)
    deep.restart()
    assert deep.update["base"] is None and deep.state["acts"] == 0
    same(apply_update(None, None, deep.update)[0], deep.state)


def test_the_whole_widget_state_carries_the_whole_debugger_state(deep):
    """A comm_open, a reloaded page's request_state and "save widget state" take get_state(): a full update at the
    current seq (nothing advanced), so they draw without a resync; a trait change still sends the delta."""
    from ipywidgets.widgets.widget import Widget

    deep.step()
    seq = deep.update["seq"]
    whole = deep.get_state()["update"]
    assert (whole["seq"], whole["base"]) == (seq, None) and deep.get_state("update")["update"]["base"] == seq - 1
    same(apply_update(None, None, whole)[0], deep.state)
    saved = Widget.get_manager_state(widgets=[deep])["state"][deep.model_id]["state"]["update"]
    assert saved["base"] is None and len(saved["actors"]) == 754
    deep.step()
    assert deep.update["base"] == seq, "the whole state took nothing from the stream"


def test_rows_that_leave_a_truncated_table_are_sent_as_gone(monkeypatch):
    """Past MAX_ACTORS rows the next actor takes the last row: the row it replaced leaves the front end's table."""
    monkeypatch.setattr(debugger_widget, "MAX_ACTORS", 4)
    flow.clear_default_session()  # a session of its own, not the 30-layer job's

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    widget = DebuggerWidget(flow.debug(pad_Job, np.ones((2, 1, 3, 3), np.float32)))
    state, seq = apply_update(None, None, widget.update)
    gone = 0
    while not widget.dbg.finished:
        widget.step()
        gone += len(widget.update["actors_gone"])
        state, seq = apply_update(state, seq, widget.update)
        same(state, widget.state)
        assert len(state["actors"]) == 4
    assert gone > 0


def updates_fixture() -> dict:
    """The pad job's debugger driven through a restart, with a table of 6 rows (so rows leave it) and a window of 6
    register lifetimes (so the window slides): every update the
    comm carried and the kernel's whole state after it. extension/test/debugstate.test.ts applies them with the real
    front-end code; ``python -m tests.notebook.test_debugger_update`` rewrites the committed fixture
    (tests/e2e/fixtures/debugger_updates.json)."""
    saved = debugger_widget.MAX_ACTORS, debugger_widget.MAX_LIFETIMES
    debugger_widget.MAX_ACTORS = debugger_widget.MAX_LIFETIMES = 6
    try:
        flow.clear_default_session()

        @flow.global_function()
        def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
            return flow.reflection_pad2d(x, padding=1)

        widget = DebuggerWidget(flow.debug(pad_Job, np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)))
        steps = [{"update": widget.update, "state": widget.state}]
        for cmd, args in [("step", {}), ("step", {}), ("inspect", {"name": "Input_0/out"}), ("step", {}),
                          ("break", {"kind": "op", "target": "reflection_pad2d_0"}), ("continue", {}),
                          ("restart", {}), ("step_n", {"n": 3}), ("step", {}), ("run_to_end_of_job", {})]:
            widget.command(cmd, args)
            steps.append({"command": cmd, "update": widget.update, "state": widget.state})
        return {"job": "pad_Job", "max_actors": 6, "max_lifetimes": 6, "steps": steps}
    finally:
        debugger_widget.MAX_ACTORS, debugger_widget.MAX_LIFETIMES = saved


def test_the_front_ends_fixture_is_what_the_widget_sends():
    """The committed fixture is the current widget's: same commands, same kinds of update, same keys."""
    from pathlib import Path

    committed = json.loads((Path(__file__).parents[1] / "e2e" / "fixtures" / "debugger_updates.json").read_text())
    fresh = json.loads(json.dumps(updates_fixture()))
    shape = [[s.get("command"), s["update"]["base"] is None, sorted(s["update"])] for s in fresh["steps"]]
    assert shape == [[s.get("command"), s["update"]["base"] is None, sorted(s["update"])] for s in committed["steps"]]
    deltas = [s["update"] for s in fresh["steps"] if s["update"]["base"] is not None]
    assert any(u["actors_gone"] for u in deltas)
    firsts = [u["memory_changed"]["first"] for u in deltas]
    assert max(firsts) > 0  # the lifetimes' window slides
    state, seq = None, None
    for s in fresh["steps"]:  # and the Python rule rebuilds every state from it
        state, seq = apply_update(state, seq, s["update"])
        same(state, s["state"])


if __name__ == "__main__":
    from pathlib import Path

    out = Path(__file__).parents[1] / "e2e" / "fixtures" / "debugger_updates.json"
    out.write_text(json.dumps(updates_fixture(), separators=(",", ":")) + "\n")
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
