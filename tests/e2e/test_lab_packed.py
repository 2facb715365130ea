"""The plan browser in a live JupyterLab draws a 10,000-task Plan from its `packed` trait (payload version 2 with a
binary body, sent by ipywidgets as a buffer) with no error text; a click reaches the kernel as the `selected` trait.
FLOWLAB_E2E_SHOTS=dir keeps the screenshot."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

from tests.e2e.harness import CHROMIUM, CHROMIUM_ARGS, lab_server, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (the e2e extra)")
pytest.importorskip("anywidget", reason="anywidget is not installed")

SHOTS = Path(os.environ["FLOWLAB_E2E_SHOTS"]) if os.environ.get("FLOWLAB_E2E_SHOTS") else None
SETUP = '''import types
from flowlab.notebook.widgets import PlanBrowser
from flowlab.viz.payload import plan_payload
from tests.helpers.synthetic_plan import synthetic_plan

class NoJobs:  # the synthetic Plan has no job set: no job-kind views, no shared interfaces
    shared_interfaces = {}
    def of_kind(self, kind):
        return ()

payload = plan_payload(synthetic_plan(10_000))
b = PlanBrowser(types.SimpleNamespace(job_set=NoJobs()), "plan", payloads={"plan": payload}, svgs={"plan": ""})
print("packed", b.packed["flowlab_payload"], b.packed["encoding"], len(b.packed["body"]), "bytes")
b'''


@pytest.fixture
def lab(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP)]
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nbformat.write(nb, tmp_path / "live.ipynb")
    with lab_server(tmp_path, "live.ipynb") as url:
        yield url, tmp_path


def test_a_10000_task_plan_draws_from_the_packed_trait(lab):
    from playwright.sync_api import sync_playwright

    url, tmp_path = lab
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        try:
            page.goto(url)
            page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=90_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_selector("text=packed 2 gzip", timeout=120_000)  # the kernel sent version 2, binary
            view = page.locator(".jp-OutputArea-output .flowlab-live .fl-root").first  # the widget, hosted
            view.locator(".fl-graph .fl-node").first.wait_for(timeout=120_000)
            view.locator(".fl-title", has_text="10000 tasks").wait_for(timeout=10_000)
            assert page.locator(".fl-error").count() == 0, page.locator(".fl-error").all_text_contents()
            # the widget drew it, not the saved-output renderer (docs/notebook-outputs.md)
            assert page.locator(".flowlab-mime[data-flowlab-mode='widget']").count() == 1
            assert page.locator(".flowlab-saved .fl-node").count() == 0
            boxes = view.locator(".fl-graph .fl-node").count()
            assert 5 <= boxes <= 300, boxes
            view.locator(":scope > .fl-muted", has_text="10000 tasks").wait_for(timeout=10_000)  # the Plan summary
            page.screenshot(path=str(tmp_path / "packed_10k.png"))
            if SHOTS:
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SHOTS / "lab_packed_10k.png"))
            view.locator(".fl-search").fill("job3-op17")  # Enter opens the groups that hold the first match
            view.locator(".fl-search").press("Enter")
            node = view.locator(".fl-node.current")
            node_id = node.get_attribute("data-id")
            assert node_id and node_id.startswith("t:"), node_id
            node.click()
            view.locator(".fl-detail-title", has_text="job3-op17").wait_for(timeout=10_000)
            if SHOTS:
                page.screenshot(path=str(SHOTS / "lab_packed_10k_selected.png"))
            page.evaluate("window.jupyterapp.commands.execute('notebook:insert-cell-below')")
            page.evaluate("window.jupyterapp.commands.execute('notebook:enter-edit-mode')")
            page.keyboard.type("print('kernel selected', b.selected)")
            page.keyboard.press("Shift+Enter")
            page.wait_for_selector(f"text=kernel selected {node_id}", timeout=30_000)
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"))
            raise
        finally:
            browser.close()
