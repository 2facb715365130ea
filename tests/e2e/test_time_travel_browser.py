"""The debugger view's time-travel buttons (issue 27 §1), in chromium with the built view fed a live DebuggerWidget's
states: "◀ back" sends ``back {"n": 1}`` and the kernel's answer shows one act fewer; "go to writer" sends the typed
blob and the answer shows the writer's act in the status and the blob in the inspector."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.notebook.debugger_widget import DebuggerWidget
from tests.e2e.harness import harness_page, missing
from tests.helpers.e2e_debugger import MOUNT, sent_commands
from tests.helpers.e2e_devices import SHOTS

if missing():
    pytest.skip(missing(), allow_module_level=True)


def pad_widget() -> DebuggerWidget:
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    return DebuggerWidget(flow.debug(pad_Job, np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)))


def status(page) -> str:
    return page.locator(".fl-debugger .fl-status-line").inner_text()


def test_back_and_go_to_writer_buttons_send_their_commands_and_show_the_answer():
    widget = pad_widget()
    widget.step_n(20)
    with harness_page() as page:
        page.evaluate(MOUNT, [widget.payload, widget._stream.whole(widget.state)])
        page.wait_for_function("document.querySelectorAll('.fl-debugger .fl-node').length > 3", timeout=30_000)
        assert "20 acts" in status(page)
        page.locator(".fl-debugger button", has_text="◀ back").click()
        assert sent_commands(page) == [{"type": "command", "cmd": "back", "args": {"n": 1}}]
        widget.command("back", {"n": 1})  # what the kernel does with it
        page.evaluate("u => window.model.set('update', u)", widget.update)
        page.wait_for_function("document.querySelector('.fl-debugger .fl-status-line').textContent.includes('19 acts')")
        assert status(page).startswith("back 1 act: last act #18 Return_0")

        box = page.locator(".fl-debugger input[placeholder^='register id, blob']")
        box.fill("reflection_pad2d_0/y_0")
        page.locator(".fl-debugger button", has_text="go to writer").click()
        assert sent_commands(page)[-1] == {"type": "command", "cmd": "go_to_writer",
                                           "args": {"name": "reflection_pad2d_0/y_0"}}
        widget.command("go_to_writer", {"name": "reflection_pad2d_0/y_0"})
        assert widget.state["error"] is None and widget.dbg.acts == 18
        page.evaluate("u => window.model.set('update', u)", widget.update)
        page.wait_for_function("document.querySelector('.fl-debugger .fl-status-line').textContent.includes('18 acts')")
        assert "at the writer of reflection_pad2d_0/y_0; read after it by: none yet: last act #17 " \
               "reflection_pad2d_0" in status(page)
        inspector = page.locator(".fl-debugger .fl-panel", has=page.locator("b", has_text="inspect"))
        assert "reflection_pad2d_0/y_0" in inspector.inner_text() and "[2, 1, 5, 5]" in inspector.inner_text()
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "time_travel_go_to_writer.png"), full_page=False)
        page.locator(".fl-debugger .fl-controls").screenshot(path=str(SHOTS / "time_travel_controls.png"))
