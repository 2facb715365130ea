"""A notebook whose %%flowjob output was saved (as nbclient or JupyterLab save it: no widget state), reopened in
JupyterLab: the output shows flowlab's graph from its payload, not "Error displaying widget: model not found"
(issue 10). Needs chromium, playwright, JupyterLab and the prebuilt labextension (extension/labextension)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest

from .harness import lab_server

ROOT = Path(__file__).resolve().parents[2]
LABEXTENSION = ROOT / "extension" / "labextension"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed")
if not os.path.exists(CHROMIUM):
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)
if not (LABEXTENSION / "package.json").is_file():
    pytest.skip("the labextension is not built (extension/labextension)", allow_module_level=True)

CELL = """%%flowjob -o res
import numpy as np
import flowlab as flow
import flowlab.typing as tp

@flow.global_function()
def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
    return flow.reflection_pad2d(x, padding=1)

y = pad_Job(np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32))
"""


def saved_notebook(path: Path) -> None:
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext flowlab"), nbformat.v4.new_code_cell(CELL)]
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                   store_widget_state=False).execute()
    data = nb.cells[1].outputs[0]["data"]
    assert "application/vnd.jupyter.widget-view+json" in data  # saved with the live widget's view, as in Lab
    nbformat.write(nb, path)


def test_a_saved_flowjob_output_draws_its_graph_without_the_widget(tmp_path):
    saved_notebook(tmp_path / "saved.ipynb")
    with lab_server(tmp_path, "saved.ipynb") as url:  # the prebuilt labextension on JUPYTER_PATH
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            try:
                page.goto(url)
                page.wait_for_selector(".flowlab-mime .fl-node", timeout=90_000)
                assert page.locator(".flowlab-mime", has_text="pad_Job (user)").count() == 1
                time.sleep(2)  # the widget manager gives up on the model it cannot find by now
                assert page.locator("text=model not found").count() == 0
            except Exception:
                page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
                raise
            finally:
                browser.close()
