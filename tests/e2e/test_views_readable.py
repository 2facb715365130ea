"""What a person sees of this pass's fixes (h/live), in chromium through the standalone harness: every view's text
readable in JupyterLab's light and dark themes (WCAG contrast), the debugger's inject row, the one-line lane legend
of a 14-thread Plan, the debug button's toggle label, a debugger waiting for its first state."""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import harness_page, least_contrast, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)

from playwright.sync_api import expect

from tests.helpers.e2e_views import FIXTURES, mount, shot


@pytest.fixture(scope="module")
def page():
    with harness_page() as pg:
        yield pg


def test_inject_sends_the_typed_value_to_the_inspected_blob_and_its_error_shows_once(page):
    """The inject row sends what Python's DebuggerWidget.inject takes (a blob name, the typed number or expression
    of x); the name defaults to the inspected blob; a missing value is said at once, and cleared by the next state."""
    state = {"status": "stepped", "error": None, "next_node": "t:3", "next_actor": "actor_3", "acts": 3,
             "finished": False, "actors": [], "breakpoints": [], "stop": None, "memory": None,
             "inspected": {"regst": "r:9", "lbn": "conv_0/out", "written": True, "shape": [2, 3], "dtype": "f32",
                           "stats": {"min": 0, "max": 1, "mean": 0.5, "nan": 0, "inf": 0}}}
    mount(page, "run_small", state)
    row = page.locator(".fl-debugger .fl-inject")
    name, value = row.locator("input").nth(0), row.locator("input").nth(1)
    assert "conv_0/out" in name.get_attribute("placeholder")
    row.get_by_role("button", name="inject").click()  # no value: said here, nothing sent
    error = page.locator(".fl-debugger .fl-error")
    # expect() polls until the text is there: the error box may be drawn a frame before its text (two plain reads
    # raced under load and read an empty box)
    expect(error).to_be_visible()
    expect(error).to_contain_text("conv_0/out needs a value")
    assert page.evaluate("window.model.sent.length") == 0
    value.fill("np.where(x == 0, 1, x)")
    row.get_by_role("button", name="inject").click()
    assert page.evaluate("window.model.sent.at(-1)") == {
        "type": "command", "cmd": "inject", "args": {"name": "conv_0/out", "value": "np.where(x == 0, 1, x)"}}
    name.fill("relu_0/y_0")
    value.fill("nan")
    row.get_by_role("button", name="inject").click()
    assert page.evaluate("window.model.sent.at(-1)")["args"] == {"name": "relu_0/y_0", "value": "nan"}
    page.evaluate("s => window.model.set('state', s)", {**state, "error": "SyntaxError: invalid syntax"})
    expect(error).to_be_visible()
    expect(error).to_contain_text("SyntaxError")
    page.evaluate("s => window.model.set('state', s)", {**state, "status": "injected nan into relu_0/y_0"})
    expect(error).to_be_hidden()
    shot(page, "debugger_inject")


def test_a_fourteen_thread_lane_legend_is_one_compact_line(page):
    """The seed Plan with its tasks on 14 threads: the legend writes "machine 0 / thread" once and one short label
    per swatch, on one line that fits the toolbar's width; each swatch keeps its full lane name as a tooltip."""
    plan = json.loads((FIXTURES / "nbpy_pad_plan.json").read_text())
    lanes = [f"machine 0 / thread {t}" for t in range(14)]
    plan["graph"]["lanes"] = lanes
    for i, node in enumerate(n for n in plan["graph"]["nodes"] if n["kind"] == "task"):
        node["lane"] = lanes[i % 14]
    mount(page, plan)
    legend = page.locator(".fl-lanes")
    box, toolbar = legend.bounding_box(), page.locator(".fl-toolbar").bounding_box()
    line = page.locator(".fl-search").bounding_box()["height"]
    assert box["height"] <= line, f"the legend is {box['height']:.0f} px high (one line is {line:.0f})"
    assert box["x"] + box["width"] <= toolbar["x"] + toolbar["width"] + 1
    assert legend.inner_text().count("thread") == 1
    chips = legend.locator(".fl-lane-chip")
    assert chips.count() == 14 and chips.nth(13).get_attribute("title") == "machine 0 / thread 13"
    assert all(abs(chips.nth(i).bounding_box()["y"] - chips.nth(0).bounding_box()["y"]) < 1 for i in range(14))
    colours = [chips.nth(i).locator(".fl-swatch").evaluate("e => getComputedStyle(e).backgroundColor")
               for i in range(14)]
    assert len(set(colours)) == 14, colours  # no two threads share a colour
    shot(page, "lanes_14")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_view_is_readable_in_light_and_dark_themes(page, theme):
    """Text against what is behind it (WCAG AA, 4.5:1) in the plan browser with a selected node, its detail pane,
    search matches and an edge label, and in the debugger (next actor's box and row, inspector, panels), under
    JupyterLab's light and dark themes (body[data-jp-theme-light])."""
    page.evaluate("t => { document.body.dataset.jpThemeLight = t; document.body.style.background = "
                  "t === 'false' ? '#111' : '#fff'; }", "false" if theme == "dark" else "true")
    try:
        mount(page, "nbpy_pad_plan")
        page.fill(".fl-search", "Input")
        page.keyboard.press("Enter")
        page.locator(".fl-node", has_text="reflection_pad2d_0").first.click()
        measured = least_contrast(page)
        assert {r[0] for r in measured} >= {".fl-node .fl-label", ".fl-edge-label", ".fl-detail-title"}, measured
        low = [r for r in measured if r[2] < 4.5]
        shot(page, f"plan_{theme}")
        actors = [{"id": f"t:{i}", "name": f"actor_{i}", "job": "pad_Job", "state": "blocked",
                   "why_blocked": "waiting for register r0", "acts": i} for i in range(6)]
        state = {"status": "acted: relu_0", "error": "KeyError: no blob 'x'", "next_node": "t:3",
                 "next_actor": "actor_3", "acts": 3, "finished": False, "actors": actors, "breakpoints": [],
                 "stop": None, "memory": None,
                 "inspected": {"regst": "r:9", "lbn": "conv_0/out", "written": True, "shape": [2, 3], "dtype": "f32",
                               "stats": {"min": 0, "max": 1, "mean": 0.5, "nan": 1, "inf": 0},
                               "histogram": {"edges": [0, 0.5, 1], "counts": [2, 3]}}}
        mount(page, "run_small", state)
        assert page.locator("table.fl-actors tr.next").count() == 1
        low += [r for r in least_contrast(page) if r[2] < 4.5]
        shot(page, f"debugger_{theme}")
        mount(page, "run_small")  # the recorded run: slider, acting box, memory view
        measured = least_contrast(page)
        assert ".fl-mem text" in {r[0] for r in measured}, measured
        low += [r for r in measured if r[2] < 4.5]
        shot(page, f"run_{theme}")
    finally:
        page.evaluate("() => { delete document.body.dataset.jpThemeLight; document.body.style.background = '#fff'; }")
    assert not low, "text below 4.5:1 contrast: " + "; ".join(f"{s} {t!r} {r:.2f}" for s, t, r in low)


def test_a_debugger_before_its_first_state_says_it_waits(page):
    """A debugger drawn before the kernel's first state (a cold kernel) says so, not "· 0 acts" and no actors."""
    mount(page, "run_small", {})
    status = page.locator(".fl-debugger .fl-status-line")
    assert status.inner_text().startswith("waiting for the debugger's first state")
    page.evaluate("s => window.model.set('state', s)", {"status": "ready", "acts": 0, "next_actor": "Input_0",
                                                        "actors": [], "breakpoints": []})
    assert status.inner_text().startswith("ready")


def test_the_debug_button_says_which_way_it_toggles(page):
    """PlanBrowser.debug is a toggle: the button reads "close debugger" while one is open (debug_open), and a
    browser with no job call to debug (can_debug false) shows none."""
    mount(page, "jobset_mlp30")
    toolbar = page.locator(".fl-toolbar")
    assert toolbar.get_by_role("button", name="debug", exact=True).is_visible()
    toolbar.get_by_role("button", name="debug", exact=True).click()
    assert page.evaluate("window.model.sent.at(-1)") == {"type": "debug"}
    page.evaluate("() => window.model.set('debug_open', true)")
    assert toolbar.get_by_role("button", name="close debugger").is_visible()
    page.evaluate("() => window.model.set('debug_open', false)")
    assert toolbar.get_by_role("button", name="debug", exact=True).is_visible()
    page.evaluate("() => window.model.set('can_debug', false)")
    assert toolbar.locator("button", has_text="debug").count() == 0 or not toolbar.locator(
        "button", has_text="debug").is_visible()
