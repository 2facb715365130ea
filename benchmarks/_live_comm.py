"""The live widget's payload over the comm (issue: the widgets sent version 1 as a JSON Dict trait while notebooks
store version 2): for the 30-layer MLP train job's Plan and a synthetic 10,000-task Plan, in a live JupyterLab with a
kernel, each of three forms of the trait:

- ``v1``: the version-1 payload in a Dict trait (as the widgets sent it before);
- ``v2 base64``: version 2 as a notebook stores it (``payload_pack.pack``, the body base64 text), ``packed`` trait;
- ``v2 binary``: version 2 with the body as bytes (``payload_pack.live``), which ipywidgets sends as a binary buffer:
  what the widgets send now.

For each: the bytes of the widget's comm_open (its JSON state and buffers, without ``_esm``, the view module's source
that anywidget sends with every widget whatever the payload, reported once), and the time from the kernel starting to
make the widget (packing included) to the first box drawn in chromium (kernel ``time.time()`` against the page's
``Date.now()``: one host, one clock), forms interleaved, medians. Also the widget state ipywidgets saves into a notebook
("save widget state") for the %%flowjob plan browser, before (the v1 trait) and now.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

FORMS = ("v1", "v2 base64", "v2 binary")
NAMES = {"mlp30": "30-layer MLP train Plan (754 tasks)", "plan10k": "synthetic 10,000-task Plan"}

SETUP = '''import json, pathlib, time, anywidget, traitlets
from ipywidgets.widgets.widget import _remove_buffers
from flowlab.notebook.widgets import _ESM
from flowlab.viz.payload import plan_payload
from flowlab.viz.payload_pack import live, pack
from tests.helpers.deep_mlp import build_deep_mlp
from tests.viz.test_payload import synthetic_plan

s = build_deep_mlp()
PAYLOADS = {"mlp30": plan_payload(s.plan, s.job_set, passes=s.passes), "plan10k": plan_payload(synthetic_plan(10_000))}

class V1(anywidget.AnyWidget):  # the trait the widgets had: version 1, JSON
    _esm = _ESM
    payload = traitlets.Dict().tag(sync=True)

class V2(anywidget.AnyWidget):  # the trait they have: version 2
    _esm = _ESM
    packed = traitlets.Dict().tag(sync=True)

FORMS = {"v1": lambda p: V1(payload=p), "v2 base64": lambda p: V2(packed=pack(p)),
         "v2 binary": lambda p: V2(packed=live(p))}
HERE = pathlib.Path.cwd()

def make():
    form, name = json.loads((HERE / "next.json").read_text())
    t0 = time.time() * 1000
    w = FORMS[form](PAYLOADS[name])
    state, _, buffers = _remove_buffers(w.get_state())
    esm = len(state.pop("_esm"))
    size = len(json.dumps(state, separators=(",", ":"))) + sum(len(b) for b in buffers)
    (HERE / "made.json").write_text(json.dumps({"t0": t0, "bytes": size, "esm": esm}))
    return w'''

# Mark the views drawn so far, run the second cell (make()), and resolve with the page's clock when a new view has a
# box (or an error), checked every frame.
RUN_AND_WAIT = """async () => {
  document.querySelectorAll('.fl-root').forEach((e) => { e.dataset.old = '1'; });
  const seen = new Promise((resolve) => {
    const t0 = Date.now();
    const tick = () => {
      const err = document.querySelector('.fl-root:not([data-old]) .fl-error');
      if (err) return resolve({ t: Date.now(), error: err.textContent });
      if (document.querySelector('.fl-root:not([data-old]) .fl-node')) return resolve({ t: Date.now(), error: null });
      if (Date.now() - t0 > 180000) return resolve({ t: Date.now(), error: 'no box after 180 s' });
      requestAnimationFrame(tick);
    };
    tick();
  });
  const nb = window.jupyterapp.shell.currentWidget.content;
  nb.activeCellIndex = 1;
  void window.jupyterapp.commands.execute('notebook:run-cell');
  return await seen;
}"""


def live_rows(rounds: int) -> list[tuple[str, str]]:
    from _live_lab import live_lab

    from tests.e2e.harness import missing

    why = missing()
    if why:
        return [("live widget comm bytes and creation to first box", f"skipped: {why}")]
    times: dict[tuple[str, str], list[float]] = {(n, f): [] for n in NAMES for f in FORMS}
    sizes: dict[tuple[str, str], int] = {}
    esm = 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "next.json").write_text(json.dumps(["v2 binary", "mlp30"]))
        with live_lab(root, SETUP, ".fl-root .fl-node") as page:
            for k in range(rounds + 1):
                for name in NAMES:
                    for form in FORMS:
                        (root / "next.json").write_text(json.dumps([form, name]))
                        (root / "made.json").unlink(missing_ok=True)
                        seen = page.evaluate(RUN_AND_WAIT)
                        if seen["error"]:
                            raise RuntimeError(f"{form} {name}: {seen['error']}")
                        made = json.loads((root / "made.json").read_text())
                        sizes[name, form], esm = made["bytes"], made["esm"]
                        if k:  # round 0 warms each form (the module's JIT, the layout worker)
                            times[name, form].append(seen["t"] - made["t0"])
    out = []
    for name, label in NAMES.items():
        b = [sizes[name, f] / 1024 for f in FORMS]
        out.append((f"live widget, {label}: comm bytes, " + " / ".join(FORMS),
                    " / ".join(f"{x:.0f} KiB" for x in b) + f" (v1 / v2 binary {b[0] / b[2]:.1f}x; each comm also "
                    f"carries the view module's source, {esm / 1024:.0f} KiB)"))
        t = [statistics.median(times[name, f]) for f in FORMS]
        out.append((f"live widget, {label}: creation to first box, " + " / ".join(FORMS),
                    " / ".join(f"{x:.0f} ms" for x in t) + f" (medians of {rounds}, interleaved)"))
    return out


def saved_state_row(session: object) -> tuple[str, str]:
    """What "save widget state" writes for the %%flowjob plan browser of ``session`` (its Plan view), now and with
    the version-1 trait the widget had."""
    import anywidget
    import traitlets
    from ipywidgets.widgets.widget import Widget

    from flowlab.notebook.widgets import _ESM, PlanBrowser

    class V1(anywidget.AnyWidget):
        _esm = _ESM
        payload = traitlets.Dict().tag(sync=True)
        svg = traitlets.Unicode("").tag(sync=True)

    now = PlanBrowser(session)
    before = V1(payload=now.payload, svg=now.svg)
    sizes = [len(json.dumps(Widget.get_manager_state(widgets=[w]))) / 1024 for w in (before, now)]
    now.close()
    before.close()
    return ("live widget, 30-layer MLP plan browser: widget state saved into the .ipynb, v1 trait -> now",
            f"{sizes[0]:.0f} KiB -> {sizes[1]:.0f} KiB (the view module's source is part of both)")
