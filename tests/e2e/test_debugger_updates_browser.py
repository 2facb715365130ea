"""The built debugger view in chromium fed DebuggerWidget's `update` trait as the kernel sends it (the committed
fixture: the pad job stepped through a restart, tests/notebook/test_debugger_update.py): a view that starts on a delta
(a second view of a live widget) waits and asks for the whole state once; deltas then draw each step; a missed delta is
refused (the view keeps its last state) and asks again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.harness import harness_page, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)

FIXTURES = Path(__file__).parent / "fixtures"
STEPS = json.loads((FIXTURES / "debugger_updates.json").read_text())["steps"]

MOUNT = """async ([payload, update]) => {
  const out = document.getElementById('out'); out.replaceChildren();
  const el = document.createElement('div'); out.append(el);
  const mod = await import('/flowlab/notebook/static/flowlab_widget.js');
  const model = new window.flowlab.FakeModel({ payload, selected: '', query: '', update });
  window.model = model;
  mod.default.render({ model, el });
}"""


def status(page) -> str:
    return page.locator(".fl-debugger .fl-status-line").inner_text()


def rows(page) -> str:
    return page.locator(".fl-debugger .fl-muted", has_text="actors").first.inner_text()


def resyncs(page) -> int:
    return page.evaluate("window.model.sent.filter((m) => m.type === 'resync').length")


def test_a_view_draws_the_deltas_and_asks_for_the_whole_state_when_it_cannot():
    payload = json.loads((FIXTURES / "nbpy_pad_plan.json").read_text())
    with harness_page() as page:
        page.evaluate(MOUNT, [payload, STEPS[3]["update"]])  # a delta: this view has no state to apply it on
        assert status(page).startswith("waiting for the debugger's first state") and resyncs(page) == 1
        whole = {**STEPS[3]["state"], "seq": STEPS[3]["update"]["seq"] + 50, "base": None}  # the kernel's answer
        page.evaluate("u => window.model.set('update', u)", whole)
        assert f"· {STEPS[3]['state']['acts']} acts" in status(page)
        base = whole["seq"]
        for k in (4, 5):
            page.evaluate("u => window.model.set('update', u)", {**STEPS[k]["update"], "base": base})
            base = STEPS[k]["update"]["seq"]
            st = STEPS[k]["state"]
            assert f"· {st['acts']} acts" in status(page) and status(page).startswith(st["status"].splitlines()[0])
            assert rows(page) == f"{len(st['actors'])} of {len(st['actors'])} actors"
        assert resyncs(page) == 1
        shown = status(page)
        page.evaluate("u => window.model.set('update', u)", STEPS[8]["update"])  # 6 and 7 were lost
        assert status(page) == shown and resyncs(page) == 2
        page.evaluate("u => window.model.set('update', u)", STEPS[9]["update"])
        assert status(page) == shown and resyncs(page) == 2, "one resync per gap"
