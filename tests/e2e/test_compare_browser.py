"""The compare view as a person sees it (chromium, the built widget module, a payload as a notebook stores it): the
marks' pixels, the legend, linked selection and pan, the unmatched list; screenshots light and dark."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.harness import missing

if missing():
    pytest.skip(missing(), allow_module_level=True)

import flowlab as flow
import flowlab.typing as tp
from flowlab.notebook.compare import COMPARE_MIME, show_diff, show_pass
from tests.helpers import e2e_compare
from tests.helpers.e2e_compare import ADDED, CHANGED, DARK, share_of

page = e2e_compare.page  # the module's browser page (a pytest fixture)
SHOTS = Path(os.environ.get("FLOWLAB_E2E_SHOTS", "")) if os.environ.get("FLOWLAB_E2E_SHOTS") else None


def _pad(variant: bool):
    flow.clear_default_session()

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            y = flow.reflection_pad2d(x, padding=2 if variant else 1)
            return flow.math.relu(y) if variant else y

    pad_Job(np.zeros((2, 1, 3, 3), np.float32))
    s = flow.default_session()
    return s.plan, s.job_set


def _train_session():
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((4, 8)), y: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, 16, activation=flow.nn.relu, name="fc1")
        logits = flow.layers.dense(h, 3, name="fc2")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits, name="loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    train_job(np.zeros((4, 8), np.float32), np.zeros((4,), np.int32))
    return flow.default_session()


@pytest.fixture(scope="module")
def pad_view():
    (plan_a, set_a), (plan_b, set_b) = _pad(False), _pad(True)
    return show_diff(_Pair(plan_a, set_a), _Pair(plan_b, set_b), labels=("seed pad_Job", "padding 2 + relu"))


class _Pair:
    def __init__(self, plan, job_set):
        self.plan, self.job_set = plan, job_set


def mount(page, view) -> None:
    text = json.dumps(view._repr_mimebundle_()[COMPARE_MIME])  # as a saved notebook holds it (version 2)
    page.evaluate("(t) => window.flowlab.mountStored(t)", text)
    page.wait_for_function("[...document.querySelectorAll('.fl-canvas')].length === 2 && "
                           "[...document.querySelectorAll('.fl-canvas')].every((c) => c.dataset.layout === 'idle')")


def shot(page, name: str) -> None:
    if SHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def click_ms(page, left: str, right: str) -> float:
    """In-page milliseconds from a click on ``left`` (left pane) to ``right`` selected, laid out and painted on the
    right pane."""
    return page.evaluate("""async ([l, r]) => {
      const [L, R] = document.querySelectorAll('.fl-compare-pane');
      const el = L.querySelector(`[data-id="${l}"]`), at = el.getBoundingClientRect();
      const o = {bubbles: true, button: 0, pointerId: 1, clientX: at.x + at.width / 2, clientY: at.y + at.height / 2};
      const t0 = performance.now();
      el.dispatchEvent(new PointerEvent('pointerdown', o)); el.dispatchEvent(new PointerEvent('pointerup', o));
      await new Promise((ok) => { const tick = () => {
        const m = R.querySelector(`[data-id="${r}"]`);
        if (m && m.classList.contains('sel') && R.querySelector('.fl-canvas').dataset.layout === 'idle') ok();
        else requestAnimationFrame(tick); }; tick(); });
      await new Promise(requestAnimationFrame);
      return performance.now() - t0;
    }""", [left, right])


def pane(page, i: int):
    return page.locator(".fl-compare-pane").nth(i)


def test_marks_are_filled_with_their_colours_and_the_legend_says_so(page, pad_view):
    mount(page, pad_view)
    items = pad_view.payload["items"]
    added = next(i for i in items if i["status"] == "added" and i["what"] == "task")
    changed = next(i for i in items if i["status"] == "changed" and i["what"] == "task")
    assert added["label"].endswith("relu_0") or "relu" in added["label"], added
    node = pane(page, 1).locator(f'[data-id="{added["b"]}"]')
    assert "c-added" in node.get_attribute("class")
    assert share_of(page, node.locator(".fl-shape").bounding_box(), ADDED) > 0.3
    for side, key in ((0, "a"), (1, "b")):
        box = pane(page, side).locator(f'[data-id="{changed[key]}"] .fl-shape').bounding_box()
        assert share_of(page, box, CHANGED) > 0.3, (side, changed)
    # an unmarked box has neither colour
    plain = pane(page, 1).locator(".fl-node:not(.c-added):not(.c-changed):not(.c-out-changed) .fl-shape").first
    assert share_of(page, plain.bounding_box(), ADDED) < 0.02
    legend = page.locator(".fl-compare .fl-diff-legend").first
    assert legend.is_visible()
    text = legend.inner_text()
    counts = {s: sum(i["status"] == s for i in items) for s in ("added", "removed", "changed")}
    # every producer of a changed register is itself changed here: no outline, so no "register changed" entry
    assert text.split() == ["added", str(counts["added"]), "removed", "0", "changed", str(counts["changed"])], text
    for head in ("seed pad_Job", "padding 2 + relu"):
        assert page.get_by_text(head, exact=True).is_visible()
    unmatched = page.locator(".fl-compare-list")
    assert unmatched.is_visible() and added["label"] in unmatched.inner_text()
    shot(page, "compare_pad_light")


def test_selecting_a_node_selects_its_match_within_150ms(page, pad_view):
    mount(page, pad_view)
    left, right = next(p for p in pad_view.payload["pairs"] if p[0].startswith("t:")
                       and page.locator(f'.fl-compare-pane >> nth=0 >> [data-id="{p[0]}"]').count())
    ms = click_ms(page, left, right)
    assert ms <= 150, f"click -> the match selected on the other side took {ms:.0f} ms"
    assert "sel" in pane(page, 0).locator(f'[data-id="{left}"]').get_attribute("class")
    # and the other way, with a real click
    pane(page, 1).locator(f'[data-id="{right}"]').click()
    page.wait_for_function(f"document.querySelectorAll('.fl-compare-pane')[0]"
                           f".querySelector('[data-id=\"{left}\"]').classList.contains('sel')")
    # an added node has no match: the left side's selection clears
    added = next(i["b"] for i in pad_view.payload["items"] if i["status"] == "added" and i["what"] == "task")
    pane(page, 1).locator(f'[data-id="{added}"]').click()
    page.wait_for_function("document.querySelectorAll('.fl-compare-pane')[0]"
                           ".querySelectorAll('.fl-node.sel').length === 0")


def test_pan_and_zoom_are_linked(page, pad_view):
    mount(page, pad_view)
    box = pane(page, 0).locator(".fl-canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -300)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + 60, box["y"] + box["height"] / 2 + 30, steps=4)
    page.mouse.up()
    transforms = page.eval_on_selector_all(".fl-compare-pane .fl-viewport",
                                           "els => els.map((e) => e.getAttribute('transform'))")
    assert transforms[0] == transforms[1], transforms


def test_a_single_plan_view_shows_its_marks_and_a_legend(page, pad_view):
    """show_plan(plan, marks=diff.marks_b): the marked boxes are filled, a legend names the marks."""
    from flowlab.notebook.views import show_plan
    from flowlab.viz.payload import MIME

    (plan_a, _), (plan_b, set_b) = _pad(False), _pad(True)
    d = flow.debug.diff(plan_a, plan_b)
    text = json.dumps(show_plan(plan_b, set_b, marks=d.marks_b)._repr_mimebundle_()[MIME["plan"]])
    page.evaluate("(t) => window.flowlab.mountStored(t)", text)
    page.wait_for_selector('.fl-canvas[data-layout="idle"]')
    added = page.locator(".fl-node.c-added")
    assert added.count() >= 1 and share_of(page, added.first.locator(".fl-shape").bounding_box(), ADDED) > 0.3
    assert page.locator(".fl-node.c-changed").count() >= 1
    legend = page.locator(".fl-diff-legend")
    assert legend.is_visible() and legend.inner_text().split() == ["added", "changed"], legend.inner_text()


def test_a_reuse_mem_diff_outlines_the_producers_of_moved_registers(page):
    """enable_reuse_mem off changes only registers and blocks (D2: "the graph shows no difference"): the producers
    of the moved registers get the changed colour's dashed outline, and the legend says "register changed"."""
    from flowlab.notebook.views import show_plan
    from flowlab.viz.payload import MIME

    def plan(reuse: bool):
        flow.clear_default_session()
        config = flow.FunctionConfig()
        config.enable_reuse_mem(reuse)

        @flow.global_function(function_config=config)
        def mlp(x: tp.Numpy.Placeholder((2, 4))) -> tp.Numpy:
            return flow.layers.dense(flow.layers.dense(x, 3, activation=flow.nn.relu, name="fc1"), 2, name="fc2")

        mlp(np.zeros((2, 4), np.float32))
        return flow.default_session().plan, flow.default_session().job_set

    (a, _), (b, set_b) = plan(True), plan(False)
    d = flow.debug.diff(a, b)
    assert d.counts("task") == {"added": 0, "removed": 0, "changed": 0}
    text = json.dumps(show_plan(b, set_b, marks=d.marks_b)._repr_mimebundle_()[MIME["plan"]])
    page.evaluate("(t) => window.flowlab.mountStored(t)", text)
    page.wait_for_selector('.fl-canvas[data-layout="idle"]')
    assert page.locator(".fl-diff-legend").inner_text().split() == ["register", "changed"]
    outlined = page.locator(".fl-node.c-out-changed")
    assert outlined.count() >= 1
    stroke = outlined.first.locator(".fl-shape").evaluate("e => getComputedStyle(e).stroke")
    assert stroke == "rgb(217, 72, 15)", stroke
    box = outlined.first.locator(".fl-shape").bounding_box()
    assert share_of(page, {**box, "x": box["x"] - 2, "y": box["y"] - 2, "width": box["width"] + 4,
                           "height": box["height"] + 4}, (217, 72, 15)) > 0.02
    shot(page, "plan_reuse_diff_marks")


def test_screenshots_dark_and_the_autograd_pass(page, pad_view):
    mount(page, pad_view)
    page.evaluate(DARK)
    legend = page.locator(".fl-compare .fl-diff-legend").first
    assert legend.evaluate("e => getComputedStyle(e).color") == "rgb(230, 230, 230)"  # the dark theme's text
    shot(page, "compare_pad_dark")
    page.evaluate("document.body.style.background = '#fff'")
    session = _train_session()
    view = show_pass(session, "GenerateBackwardAndOptimizerOpConfs")
    mount(page, view)
    assert page.locator(".fl-compare-pane >> nth=1 >> .fl-node.c-added").count() >= 1
    assert page.locator(".fl-compare-pane >> nth=0 >> .fl-node.c-added").count() == 0
    shot(page, "compare_autograd_light")
    # a match inside a collapsed group: the right side opens the group, lays out and centres it (best of 3: the
    # machine running the tests is shared)
    ids = [{n["label"]: n["id"] for n in view.payload[k]["graph"]["nodes"]} for k in ("a", "b")]
    assert page.locator(f'.fl-compare-pane >> nth=1 >> [data-id="{ids[1]["fc1-matmul"]}"]').count() == 0
    ms = []
    for _ in range(3):
        mount(page, view)
        ms.append(click_ms(page, ids[0]["fc1-matmul"], ids[1]["fc1-matmul"]))
    assert min(ms) <= 150, f"click -> a hidden match shown took {ms} ms"
    page.evaluate(DARK)
    shot(page, "compare_autograd_dark")
