"""The debugger view's controls as a person uses them (issue 24 "Also"), in chromium with the built view fed the
DebuggerWidget `update` trait the kernel sends (the committed pad-job fixture, tests/notebook/test_debugger_update.py):
Enter in the inspect box submits it and the inspected blob shows; the panels that appear on the first step, a stop
and an error do not move the graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.harness import harness_page, missing
from tests.helpers.e2e_debugger import MOUNT, sent_commands

if missing():
    pytest.skip(missing(), allow_module_level=True)

FIXTURES = Path(__file__).parent / "fixtures"
STEPS = json.loads((FIXTURES / "debugger_updates.json").read_text())["steps"]
PAYLOAD = json.loads((FIXTURES / "nbpy_pad_plan.json").read_text())


def whole(k: int, seq: int, **extra: object) -> dict:
    """Step k's state as the kernel sends a whole state (no base), with `extra` keys changed."""
    return {**STEPS[k]["state"], **extra, "seq": seq, "base": None}


def mounted(page, k: int) -> None:
    page.evaluate(MOUNT, [PAYLOAD, whole(k, 100)])
    page.wait_for_function("document.querySelectorAll('.fl-debugger .fl-node').length > 3 && "
                           "[...document.querySelectorAll('.fl-debugger .fl-canvas')]"
                           ".every(c => c.dataset.layout === 'idle')",
                           timeout=30_000)


def test_enter_in_the_inspect_box_inspects_the_blob():
    with harness_page() as page:
        mounted(page, 2)
        box = page.locator(".fl-debugger input[placeholder^='register id, blob']")
        box.fill("Input_0/out")
        box.press("Enter")
        assert sent_commands(page) == [{"type": "command", "cmd": "inspect", "args": {"name": "Input_0/out"}}]
        # the kernel's answer (the fixture's state after that very command) shows the blob in the inspector
        assert STEPS[3]["command"] == "inspect"
        page.evaluate("u => window.model.set('update', u)", whole(3, 101))
        inspector = page.locator(".fl-debugger .fl-panel", has=page.locator("b", has_text="inspect"))
        assert "Input_0/out" in inspector.inner_text() and "[2, 1, 3, 3]" in inspector.inner_text()


def test_enter_in_the_breakpoint_target_adds_it():
    with harness_page() as page:
        mounted(page, 2)
        box = page.locator(".fl-debugger input[placeholder^='op / job / blob name']")
        page.locator(".fl-debugger select").filter(has_text="predicate").select_option("op")
        box.fill("reflection_pad2d_0")
        box.press("Enter")
        assert sent_commands(page) == [{"type": "command", "cmd": "break",
                                        "args": {"kind": "op", "target": "reflection_pad2d_0"}}]


def test_the_panels_of_the_first_step_a_stop_and_an_error_do_not_move_the_graph():
    with harness_page() as page:
        mounted(page, 0)  # before the first act: no last-act, stop or error panel
        node = page.locator(".fl-debugger .fl-node").first
        node_id = node.get_attribute("data-id")
        where = page.locator(f".fl-debugger .fl-node[data-id='{node_id}']")
        before = (where.bounding_box(), page.locator(".fl-debugger .fl-canvas").bounding_box())
        page.evaluate("u => window.model.set('update', u)", STEPS[1]["update"] | {"base": 100})  # the first step
        assert page.locator(".fl-debugger .fl-last-act").is_visible()
        assert (where.bounding_box(), page.locator(".fl-debugger .fl-canvas").bounding_box()) == before
        stop = {"reason": "breakpoint 1 [nan]", "op": "reflection_pad2d_0", "regst": "r3",
                "lbn": "reflection_pad2d_0/y_0", "nan": 9, "inf": 0, "node": None}
        page.evaluate("u => window.model.set('update', u)",
                      whole(2, 200, stop=stop, error="KeyError: no blob 'x'; did you mean Input_0/out?"))
        assert page.locator(".fl-debugger .fl-error").is_visible()
        assert page.locator(".fl-debugger h4", has_text="stopped: breakpoint 1").is_visible()
        assert (where.bounding_box(), page.locator(".fl-debugger .fl-canvas").bounding_box()) == before
