"""How fast are the views in a real browser? (chromium via Playwright; the built widget module in the harness of
tests/e2e/). Budgets from issue 10: first view <= 3 s and every expand <= 1 s for the synthetic 10,000-task Plan,
click -> detail pane and step -> updated view <= 100 ms. Times are taken inside the page (performance.now) from the
action to the drawn result; prints the median of ``--runs`` runs.

    .venv/bin/python benchmarks/browser_views.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.harness import harness_page, missing

# In-page measurements: each returns milliseconds from the action to the updated view.
EXPAND = """async (id) => {
  const el = document.querySelector('#out > div'), t0 = performance.now();
  el.querySelector(`[data-id="${id}"]`).dispatchEvent(new PointerEvent('pointerdown', {bubbles: true, button: 0}));
  el.querySelector(`[data-id="${id}"]`).dispatchEvent(new PointerEvent('pointerup', {bubbles: true, button: 0}));
  await new Promise((r) => {
    const f = () => el.querySelector(`[data-group="${id}"]`) ? r() : requestAnimationFrame(f);
    f();
  });
  await window.flowlab.drawn(el);
  return performance.now() - t0;
}"""
CLICK = """async (id) => {
  const el = document.querySelector('#out > div'), t0 = performance.now();
  const n = el.querySelector(`[data-id="${id}"]`);
  n.dispatchEvent(new PointerEvent('pointerdown', {bubbles: true, button: 0}));
  n.dispatchEvent(new PointerEvent('pointerup', {bubbles: true, button: 0}));
  await new Promise(requestAnimationFrame);  // until the next frame is painted
  if (!el.querySelector('.fl-detail-title')) throw new Error('no detail');
  return performance.now() - t0;
}"""
STEP = """async (i) => {
  const m = window.model, st = structuredClone(m.get('state'));
  st.next_node = `t:${i % 6}`; st.acts = i; st.actors.forEach((a) => { a.acts = i; });
  const t0 = performance.now();
  m.set('state', st);
  await new Promise(requestAnimationFrame);
  if (!document.querySelector(`[data-id="t:${i % 6}"]`).classList.contains('next')) throw new Error('not marked');
  return performance.now() - t0;
}"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if missing():
        print(f"skipped: {missing()}")
        return
    rows: dict[str, list[float]] = {}
    with harness_page() as page:
        def add(name: str, ms: float) -> None:
            rows.setdefault(name, []).append(ms)

        for _ in range(args.runs):
            add("10,000-task Plan: first view", page.evaluate("flowlab.mount('plan_10k')"))
            add("10,000-task Plan: expand a job (25 layer boxes)", page.evaluate(EXPAND, "g:job:0"))
            add("10,000-task Plan: expand a layer (40 tasks)", page.evaluate(EXPAND, "g:job:0/layer1"))
            add("30-layer MLP jobset: first view", page.evaluate("flowlab.mount('jobset_mlp30')"))
            add("30-layer MLP jobset: expand the user job", page.evaluate(EXPAND, "g:job:1"))
            add("30-layer MLP jobset: expand a layer", page.evaluate(EXPAND, "g:job:1/fc3"))
            add("click -> detail pane", page.evaluate(CLICK, "o:in"))
            actors = [{"id": f"t:{i}", "name": f"a{i}", "job": "pad_Job", "state": "blocked", "why_blocked": "",
                       "acts": 0} for i in range(1000)]
            page.evaluate("s => flowlab.mount('run_small', s)", {"status": "", "actors": actors, "next_node": "t:0"})
            add("debugger step -> updated view (1,000 actors)", page.evaluate(STEP, 1))
    print(f"{'view action (chromium, median of ' + str(args.runs) + ')':56} {'ms':>8}  budget")
    budgets = {"first view": 3000, "expand": 1000, "detail": 100, "step": 100}
    for name, ts in rows.items():
        budget = next(v for k, v in budgets.items() if k in name)
        med = statistics.median(ts)
        print(f"{name:56} {med:8.1f}  {budget} ms {'ok' if med <= budget else 'OVER'}")


if __name__ == "__main__":
    main()
