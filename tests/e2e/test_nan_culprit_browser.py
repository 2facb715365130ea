"""A NaN stop marks the culprit (issue 24, C6): the debugger's graph showed the next actor in orange and left the op
that wrote the NaN unmarked. The culprit now carries its own mark (red), the next actor keeps the orange one, and the
stop panel says which is which. Judged by pixels of the two boxes in the built view in chromium."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from tests.e2e.harness import harness_page, missing, png_pixels

if missing():
    pytest.skip(missing(), allow_module_level=True)

SHOTS = Path(__file__).resolve().parents[2] / "build" / "e2e-shots"
CULPRIT_FILL, NEXT_FILL = (255, 179, 179), (255, 210, 122)  # style.ts: .fl-node.culprit / .fl-node.next

MOUNT = """async ([payload, update]) => {
  const out = document.getElementById('out'); out.replaceChildren();
  const el = document.createElement('div'); out.append(el);
  const mod = await import('/flowlab/notebook/static/flowlab_widget.js');
  const model = new window.flowlab.FakeModel({ payload, selected: '', query: '', update });
  window.model = model;
  mod.default.render({ model, el });
}"""


def caught_widget():
    """A DebuggerWidget stopped where ``catch_nan`` says the NaN came from: ``nan-log`` (log of a negative)."""
    from flowlab.notebook.debugger_widget import DebuggerWidget

    @flow.global_function()
    def nan_job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            return flow.math.relu(flow.math.log(x, name="nan-log"), name="after-relu")

    good = np.ones((4, 3), np.float32)
    with flow.debug.catch_nan() as catcher:
        nan_job(good)
        with np.errstate(invalid="ignore"):
            nan_job(-good)
    assert catcher.op == "nan-log", str(catcher)
    widget = DebuggerWidget(catcher.debugger)
    widget.continue_()
    return widget


def share(rows: list, colour: tuple[int, int, int], tol: int = 12) -> float:
    """The share of a clip's pixels within ``tol`` of ``colour`` on every channel."""
    pixels = [p for row in rows for p in row]
    return sum(all(abs(a - b) <= tol for a, b in zip(p, colour)) for p in pixels) / max(1, len(pixels))


def test_a_nan_stop_marks_the_culprit_apart_from_the_next_actor():
    widget = caught_widget()
    state = widget.state
    culprit, nxt = state["stop"]["node"], state["next_node"]
    plan = widget.dbg.plan
    assert plan.task(int(culprit[2:])).name.endswith("nan-log"), culprit  # the act that wrote the NaN
    assert nxt and nxt != culprit
    payload = json.loads(json.dumps(widget.payload))
    whole = json.loads(json.dumps(widget._stream.whole(widget.state)))
    with harness_page(1400, 1100) as page:
        page.evaluate(MOUNT, [payload, whole])
        page.wait_for_selector('.fl-debugger .fl-canvas[data-layout="idle"]')
        page.wait_for_timeout(300)  # the move to the culprit
        bad = page.locator(f'.fl-debugger [data-id="{culprit}"]')
        after = page.locator(f'.fl-debugger [data-id="{nxt}"]')
        assert "culprit" in bad.get_attribute("class") and "next" not in bad.get_attribute("class")
        assert "next" in after.get_attribute("class") and "culprit" not in after.get_attribute("class")
        after.scroll_into_view_if_needed()
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "nan_culprit_stop.png"), full_page=True)
        bad_px = png_pixels(page.screenshot(clip=bad.bounding_box()))
        after_px = png_pixels(page.screenshot(clip=after.bounding_box()))
        assert share(bad_px, CULPRIT_FILL) > 0.3 and share(bad_px, NEXT_FILL) < 0.02, "the culprit is not red"
        assert share(after_px, NEXT_FILL) > 0.3 and share(after_px, CULPRIT_FILL) < 0.02, "the next is not orange"
        key = page.locator(".fl-debugger .fl-mark-key").inner_text()
        assert "wrote it (the culprit)" in key and "the next actor" in key
        assert "nan-log" in page.locator(".fl-debugger .fl-panel", has_text="stopped").first.inner_text()
