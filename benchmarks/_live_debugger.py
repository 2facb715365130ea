"""The live step debugger of the 30-layer MLP train job (754 actors) in a live JupyterLab: what one click of "step"
sends over the comm and how long the user waits for the view to change, for two forms of the widget, interleaved:

- ``whole``: every update is the whole state (what DebuggerWidget sent before: the ~200 KiB ``state`` trait);
- ``delta``: the change since the last update (flowlab/notebook/debugger_update.py), what it sends now.

Bytes: the JSON of the ``update`` trait as ipywidgets sends it, measured in the kernel for every step. Time: from the
click (the page's ``performance.now()``) to the status line showing the new act count (set at the end of the
synchronous draw: graph mark, actors table; the memory chart follows a frame later), and to the animation frame after
that (its layout and paint, and whatever else the page does then), medians over every step.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

FORMS = ("whole", "delta")

SETUP = '''import json, pathlib
import numpy as np
from flowlab.debug.debugger import Debugger
from flowlab.notebook.debugger_widget import DebuggerWidget
from tests.helpers.deep_mlp import build_deep_mlp

HERE = pathlib.Path.cwd()
SESSION = build_deep_mlp()
X = np.random.RandomState(0).randn(50, 64).astype(np.float32)

class Whole(DebuggerWidget):  # every update the whole state, as the widget sent before
    def _publish(self, error, full=False):
        super()._publish(error, full=True)

def make():
    form = json.loads((HERE / "next.json").read_text())
    dbg = Debugger(SESSION, SESSION.function_descs["deep_train"], (X, np.arange(50, dtype=np.int32) % 10), {})
    w = (Whole if form == "whole" else DebuggerWidget)(dbg)
    sent = []
    w.observe(lambda c: sent.append(len(json.dumps(w.get_state("update"), separators=(",", ":")))), names="update")
    w.observe(lambda c: (HERE / "sent.json").write_text(json.dumps(sent)), names="update")
    return w'''

# Click step; resolve with the milliseconds until the status line says one act more (the state is drawn into the
# page: it is set at the end of the synchronous draw) and until the animation frame after that one.
STEP = """async (acts) => {
  const dbg = [...document.querySelectorAll('.fl-debugger')].at(-1);
  const status = dbg.querySelector('.fl-status-line');
  const step = [...dbg.querySelectorAll('button')].find((b) => b.textContent === 'step');
  const want = ` ${acts + 1} acts`;
  let drawn = -1;
  const seen = new MutationObserver(() => {
    if (drawn < 0 && status.textContent.includes(want)) drawn = performance.now() - t0;
  });
  seen.observe(status, { childList: true, characterData: true, subtree: true });
  const t0 = performance.now();
  step.click();
  return await new Promise((resolve) => {
    const tick = () => {
      if (status.textContent.includes(want)) {
        seen.disconnect();
        return requestAnimationFrame(() => resolve([drawn, performance.now() - t0]));
      }
      if (performance.now() - t0 > 60000) return resolve([-1, -1]);
      requestAnimationFrame(tick);
    };
    tick();
  });
}"""


def publish_rows(steps: int) -> list[tuple[str, str]]:
    """The kernel's side of one step: ``DebuggerWidget._publish`` (the actors table, the memory record, the delta)
    after an act, with every actor row and register lifetime built again (as before) against only the rows and
    lifetimes that moved (now, flowlab/notebook/debugger_tables.py),
    two debuggers of the same job stepped in turn, each publish timed on its own (``_util.clock``: --cpu)."""
    import numpy as np
    from _util import clock

    from flowlab.debug.debugger import Debugger
    from flowlab.notebook.debugger_tables import StateTables
    from flowlab.notebook.debugger_widget import DebuggerWidget
    from tests.helpers.deep_mlp import build_deep_mlp

    class Scratch(StateTables):  # as the widget built its tables before: every row and every lifetime anew
        def actors(self, dbg, nxt, limit, full=False):
            rows = [{"id": f"t:{a.actor_id}", "name": dbg.qualified(a), "job": r.job, "state": r.state,
                     "why_blocked": r.reason, "acts": r.acts, "type": r.task_type,
                     "registers": " ".join(f"r{rid} {u}/{n}" for rid, (u, n) in r.occupancy.items())}
                    for a, r in zip(dbg.runtime.actors.values(), dbg.actors(full=True))]
            return {"actors": rows[:limit], "actors_total": len(rows)}

        def memory(self, dbg, limit, full=False):
            memory = dbg.memory().to_dict()
            total = len(memory["lifetimes"])
            return {**memory, "lifetimes": memory["lifetimes"][-limit:], "lifetimes_total": total}

    class EveryRow(DebuggerWidget):
        def __init__(self, dbg):
            super().__init__(dbg)
            self._tables = Scratch()

    session = build_deep_mlp()
    x = np.random.RandomState(0).randn(50, 64).astype(np.float32)
    args = (x, np.arange(50, dtype=np.int32) % 10)
    widgets = {form: cls(Debugger(session, session.function_descs["deep_train"], args, {}))
               for form, cls in (("every row", EveryRow), ("changed rows", DebuggerWidget))}
    times: dict[str, list[float]] = {form: [] for form in widgets}
    for k in range(steps + 5):
        for form, w in widgets.items():
            w.dbg.step()
            start = clock()
            w._publish(None)
            if k >= 5:  # the first steps warm both
                times[form].append(clock() - start)
    assert widgets["every row"].state == widgets["changed rows"].state
    before, now = (statistics.median(times[form]) * 1e3 for form in widgets)
    return [("live debugger, 30-layer MLP train job (754 actors): kernel-side publish per step, every row -> changed"
             " rows", f"{before:.1f} ms -> {now:.1f} ms ({before / now:.1f}x; medians of {steps} steps, interleaved)")]


def debugger_rows(rounds: int, steps: int) -> list[tuple[str, str]]:
    from _live_lab import live_lab

    from tests.e2e.harness import missing

    why = missing()
    label = "live debugger, 30-layer MLP train job (754 actors): one step"
    if why:
        return [(f"{label}: comm bytes and click to visible change", f"skipped: {why}")]
    times: dict[str, list[float]] = {f: [] for f in FORMS}
    frames: dict[str, list[float]] = {f: [] for f in FORMS}
    sizes: dict[str, list[int]] = {f: [] for f in FORMS}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "next.json").write_text(json.dumps("delta"))
        with live_lab(root, SETUP, ".fl-debugger .fl-node") as page:
            page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=300_000)
            for k in range(rounds + 1):
                for form in FORMS:
                    (root / "next.json").write_text(json.dumps(form))
                    page.evaluate("() => { const nb = window.jupyterapp.shell.currentWidget.content;"
                                  " nb.activeCellIndex = 1;"
                                  " return window.jupyterapp.commands.execute('notebook:run-cell'); }")
                    page.locator(".fl-debugger .fl-status-line", has_text=" 0 acts").last.wait_for(
                        timeout=120_000)
                    page.locator(".fl-debugger .fl-node").last.wait_for(timeout=120_000)
                    for a in range(steps):
                        drawn, frame = page.evaluate(STEP, a)
                        if frame < 0:
                            raise RuntimeError(f"{form}: step {a} changed nothing in 60 s")
                        if k:  # round 0 warms each form
                            times[form].append(drawn)
                            frames[form].append(frame)
                    if k:
                        sizes[form] += json.loads((root / "sent.json").read_text())  # every step's update
    b = {f: statistics.median(sizes[f]) / 1024 for f in FORMS}
    t = {f: statistics.median(times[f]) for f in FORMS}
    t2 = {f: statistics.median(frames[f]) for f in FORMS}
    n = len(times["delta"])
    return [(f"{label}: comm bytes, whole state -> delta",
             f"{b['whole']:.1f} KiB -> {b['delta']:.2f} KiB ({b['whole'] / b['delta']:.0f}x less; medians of {n})"),
            (f"{label}: click to visible change, whole state -> delta",
             f"{t['whole']:.0f} ms -> {t['delta']:.0f} ms drawn into the page, {t2['whole']:.0f} ms -> "
             f"{t2['delta']:.0f} ms to the frame after (medians of {n} steps, forms interleaved)")]


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _util import QUICK, table

    table("live debugger", publish_rows(20 if QUICK else 100) + debugger_rows(1 if QUICK else 3, 3 if QUICK else 10))
