"""Stored payloads and the kernel tier, as a person sees them in chromium (the standalone harness, drawing the built
module): a Plan stored as version 2 (gzipped, as flowlab saves it now) and the same Plan as version 1 (as older flowlab
saved it) draw the same boxes and details; the recorded run's act pane and the debugger's act view say which kernel
tier ran the act."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.harness import harness_page, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)

SHOTS = Path(os.environ.get("FLOWLAB_E2E_SHOTS", "")) if os.environ.get("FLOWLAB_E2E_SHOTS") else None


@pytest.fixture(scope="module")
def page():
    with harness_page() as pg:
        yield pg


def shot(page, name: str) -> None:
    if SHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"))


def drawn_view(page) -> tuple[list[str], str]:
    """The box labels drawn, and the detail pane of the reflection_pad2d task once clicked."""
    labels = sorted(page.locator(".fl-node .fl-label").all_text_contents())
    page.locator(".fl-node", has_text="reflection_pad2d_0").first.click()
    return labels, page.locator(".fl-detail").text_content()


def test_a_stored_v2_plan_and_the_old_v1_plan_draw_the_same(page):
    ms = page.evaluate("window.flowlab.mountStored('nbpy_pad_plan')")  # version 1: an old saved notebook
    assert page.locator(".fl-error").count() == 0 and ms < 3000
    old = drawn_view(page)
    ms = page.evaluate("window.flowlab.mountStored('stored_pad_plan')")  # version 2: decoded in the browser
    assert page.locator(".fl-error").count() == 0 and ms < 3000
    shot(page, "stored_pad_plan")
    new = drawn_view(page)
    assert new == old and len(new[0]) >= 5
    assert "register" in new[1] and "memory block" in new[1]  # the task's detail rows came through the decoding


def pane_row(panel, key: str):
    return panel.locator("tr", has=panel.page.locator(f"th:text-is('{key}')")).locator("td")


def test_the_run_act_pane_shows_the_kernel_tier(page):
    page.evaluate("window.flowlab.mount('run_small')")
    pane = page.locator(".fl-run > .fl-panel").first
    for act, text in ((0, "reference (the NumPy kernel)"), (3, "numba (the compiled Numba kernel)"),
                      (5, "none (no op kernel ran in this act)")):
        page.eval_on_selector(".fl-slider", f"e => {{ e.value = '{act}'; e.dispatchEvent(new Event('input')); }}")
        cell = pane_row(pane, "kernel tier")
        assert cell.text_content() == text
        box, outer = cell.bounding_box(), pane.bounding_box()
        assert box["width"] > 0 and outer["y"] <= box["y"] and box["y"] + box["height"] <= outer["y"] + outer["height"]
        assert page.locator(".fl-act-label").text_content().endswith({0: " · reference", 3: " · numba"}.get(act, ")"))
        if act == 3:
            pane.scroll_into_view_if_needed()
            shot(page, "run_act_tier")


def test_the_debuggers_act_view_shows_the_kernel_tier(page):
    state = {"status": "acted: #17 reflection_pad2d_0", "error": None, "next_node": "t:4", "next_actor": "actor_4",
             "acts": 18, "finished": False, "actors": [], "breakpoints": [], "inspected": None, "stop": None,
             "memory": None, "last_act": {"index": 17, "node": "t:3", "actor": "reflection_pad2d_0", "job": "pad_Job",
                                          "reads": ["r:2"], "writes": ["r:3"], "tier": "numba"}}
    page.evaluate("([s]) => window.flowlab.mount('run_small', s)", [state])
    view = page.locator(".fl-last-act")
    assert view.is_visible() and view.locator("h4").text_content() == "last act 17: reflection_pad2d_0 (pad_Job)"
    assert pane_row(view, "kernel tier").text_content() == "numba (the compiled Numba kernel)"
    shot(page, "debugger_act_tier")


def test_names_keep_every_character_through_python_packing_and_browser_decoding(page):
    """UTF-8 in the gzipped body (pack writes ensure_ascii=False) decodes to the same text, and stays text."""
    import json

    from flowlab.viz.payload_pack import pack

    name = "ünï — 日本語 <img src=x onerror=alert(1)> \U0001f600"
    payload = json.loads((Path(__file__).parent / "fixtures" / "nbpy_pad_plan.json").read_text())
    node = next(n for n in payload["graph"]["nodes"] if n["label"] == "reflection_pad2d_0")
    node["label"] = name
    payload["graph"]["details"][node["detail"]]["title"] = name
    page.evaluate("(t) => window.flowlab.mountStored(t)", json.dumps(pack(payload)))
    assert page.locator(".fl-error").count() == 0
    box = page.locator(".fl-node", has_text="日本語").first
    assert box.locator(".fl-label").text_content().startswith("ünï — 日本語 <img")  # a long label ends in "…"
    box.click()
    assert page.locator(".fl-detail-title").text_content() == name and page.locator("#out img").count() == 0
