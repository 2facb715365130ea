"""The built module as a live anywidget in JupyterLab with a kernel: an AnyWidget with the PlanBrowser traits of
payload.md (payload, selected, query) draws the graph; a search and a click reach the kernel as the `selected` trait
and a select message; a focus message from the kernel selects a node inside a collapsed layer."""

from __future__ import annotations

import nbformat
import pytest

from tests.e2e.harness import CHROMIUM, CHROMIUM_ARGS, ROOT, lab_server, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (the e2e extra)")
pytest.importorskip("anywidget", reason="anywidget is not installed")

SETUP = f'''import json, pathlib, anywidget, traitlets
ROOT = pathlib.Path({str(ROOT)!r})
class View(anywidget.AnyWidget):  # the traits of flowlab.notebook.PlanBrowser (payload.md)
    _esm = ROOT / "flowlab" / "notebook" / "static" / "flowlab_widget.js"
    payload = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)
got = []
v = View(payload=json.loads((ROOT / "tests" / "e2e" / "fixtures" / "jobset_mlp30.json").read_text()))
v.on_msg(lambda w, m, b: got.append(m))
v'''


@pytest.fixture
def lab(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP)]
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nbformat.write(nb, tmp_path / "live.ipynb")
    with lab_server(tmp_path, "live.ipynb") as url:
        yield url, tmp_path


def run_cell(page, code: str) -> None:
    page.evaluate("window.jupyterapp.commands.execute('notebook:insert-cell-below')")
    page.evaluate("window.jupyterapp.commands.execute('notebook:enter-edit-mode')")
    page.keyboard.type(code)
    page.keyboard.press("Shift+Enter")


def test_widget_module_in_a_live_kernel(lab):
    from playwright.sync_api import sync_playwright

    url, tmp_path = lab
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1300})
        try:
            page.goto(url)
            page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=90_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_selector(".fl-graph .fl-node", timeout=60_000)
            page.fill(".fl-search", "loss")
            page.keyboard.press("Enter")
            page.locator('.fl-graph [data-id="o:loss"]').click()
            run_cell(page, "print('kernel sees', v.selected, v.query, got[-1])")
            page.wait_for_selector("text=kernel sees o:loss loss {'type': 'select', 'id': 'o:loss'}", timeout=30_000)
            run_cell(page, "v.send({'type': 'focus', 'id': 'o:fc7-relu'})")
            page.wait_for_selector('.fl-graph [data-id="o:fc7-relu"].sel', timeout=30_000)
            assert page.locator(".fl-detail-title").first.text_content() == "fc7-relu"
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"))
            raise
        finally:
            browser.close()
