"""Export buttons (issue 24): a view's "SVG" and "PNG" save the graph as drawn, the debugger's "trace JSON" saves the
recorded acts. Each click must give a browser download (Playwright's download event) whose content is a valid SVG
holding the drawn labels, a PNG of the view's size that is not blank, or the trace JSON the kernel sent."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.harness import harness_page, missing, png_pixels

if missing():
    pytest.skip(missing(), allow_module_level=True)

FIXTURES = Path(__file__).parent / "fixtures"
SVG_NS = "{http://www.w3.org/2000/svg}"


def saved(page, button) -> tuple[str, bytes]:
    with page.expect_download(timeout=10_000) as info:
        button.click()
    download = info.value
    return download.suggested_filename, Path(download.path()).read_bytes()


def test_a_views_svg_and_png_buttons_save_the_graph_as_drawn():
    with harness_page() as page:
        page.evaluate("n => window.flowlab.mountStored(n)", "nbpy_pad_plan")
        root = page.locator(".fl-root").first
        labels = {t for t in root.locator(".fl-node .fl-label").all_text_contents() if t}
        assert labels
        name, svg = saved(page, root.locator("button", has_text="SVG"))
        assert name.endswith(".svg")
        tree = ET.fromstring(svg)
        assert tree.tag == f"{SVG_NS}svg" and float(tree.get("width")) > 100
        texts = {"".join(t.itertext()) for t in tree.iter(f"{SVG_NS}text")}
        assert labels <= texts, labels - texts  # every label drawn is in the file
        # the page's stylesheet is not in the file: paint is written on the elements
        rect = next(tree.iter(f"{SVG_NS}rect"))
        assert "fill:" in rect.get("style", "")
        name, png = saved(page, root.locator("button", has_text="PNG"))
        assert name.endswith(".png") and png[:8] == b"\x89PNG\r\n\x1a\n"
        pixels = png_pixels(png)
        box = root.locator("svg.fl-svg").bounding_box()
        assert abs(len(pixels[0]) - box["width"]) <= 2 and abs(len(pixels) - box["height"]) <= 2
        assert len({p for row in pixels[::7] for p in row[::7]}) > 5  # drawn boxes and text, not one blank colour


def test_the_debuggers_trace_button_saves_the_trace_the_kernel_sends():
    import flowlab as flow
    import flowlab.typing as tp
    from flowlab.notebook.debugger_widget import DebuggerWidget

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    widget = DebuggerWidget(flow.debug(pad_Job, np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)))
    kernel: list[dict] = []
    widget.send = lambda msg, buffers=None: kernel.append(msg)
    widget.command("step_n", {"n": 6})
    with harness_page() as page:
        page.evaluate("([p, s]) => window.flowlab.mount(p, s)", [widget.payload, widget.state])
        dbg = page.locator(".fl-debugger")
        assert dbg.locator("button", has_text="SVG").count() == 1  # the debugger's graph has them too
        dbg.locator("button", has_text="trace JSON").click()
        asked = page.evaluate("window.model.sent.filter((m) => m.type === 'command')")
        assert asked == [{"type": "command", "cmd": "export_trace", "args": {}}]
        widget.command(asked[0]["cmd"], asked[0]["args"])  # the kernel runs it and answers with a message
        assert widget.state["error"] is None and len(kernel) == 1
        with page.expect_download(timeout=10_000) as info:
            page.evaluate("m => window.model.emit('msg:custom', m)", json.loads(json.dumps(kernel[0])))
        assert info.value.suggested_filename == "pad_Job-trace.json"
        trace = json.loads(Path(info.value.path()).read_text())
        acts = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        assert [e["args"]["seq"] for e in acts] == list(range(6))
        assert [e["name"] for e in acts] == [e["name"] for e in kernel[0]["trace"]["traceEvents"] if e["ph"] == "X"]
