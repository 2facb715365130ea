"""A notebook saved in JupyterLab and reopened (issue 24 item 2; docs/notebook-outputs.md): its %%flowjob outputs (a
1-device and a 2-device job) show the view the user last looked at whatever the kernel and the widget state, and a live
kernel takes them over again when the cells re-run.

The notebook is run and saved by JupyterLab itself (so it is trusted, as a user's own notebook is, and ipywidgets'
renderer would be chosen over flowlab's), with ipywidgets' "save widget state" on. Then:
(b) reopened with no kernel: the saved views draw, no "Loading widget..." stays;
(a) reopened with a fresh kernel (JupyterLab's default): the saved views draw, no "Error displaying widget: model not
    found";
(c) in both, the first output shows the jobs view the user switched to live, not the Plan it opened on;
(d) re-running the cells in that kernel gives the live plan browsers back;
and a page reloaded while its kernel lives shows the live widgets again, as it did before.
FLOWLAB_E2E_SHOTS=dir keeps the screenshots."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from tests.e2e.harness import CHROMIUM, CHROMIUM_ARGS, lab_server, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (the e2e extra)")
ROOT = Path(__file__).resolve().parents[2]
if not (ROOT / "extension" / "labextension" / "package.json").is_file():
    pytest.skip("the labextension is not built (extension/labextension)", allow_module_level=True)

SHOTS = Path(os.environ["FLOWLAB_E2E_SHOTS"]) if os.environ.get("FLOWLAB_E2E_SHOTS") else None
JOBSET, PLAN = "application/vnd.flowlab.jobset+json", "application/vnd.flowlab.plan+json"
ONE_DEVICE = """%%flowjob
import numpy as np
import flowlab as flow
import flowlab.typing as tp

@flow.global_function()
def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
    return flow.reflection_pad2d(x, padding=1)

y = pad_Job(np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32))
"""
TWO_DEVICES = """%%flowjob
import numpy as np
import flowlab as flow
import flowlab.typing as tp
flow.config.cpu_device_num(2)

@flow.global_function()
def dp_Job(x: tp.Numpy.Placeholder((8, 4))) -> tp.Numpy:
    with flow.scope.placement("cpu", "0:0-1"):
        return flow.math.relu(x)

y = dp_Job(np.ones((8, 4), np.float32))
"""
ERROR_TEXT = ("Error displaying widget", "model not found", "Loading widget")


@pytest.fixture
def lab(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext flowlab"), nbformat.v4.new_code_cell(ONE_DEVICE),
                nbformat.v4.new_code_cell(TWO_DEVICES)]
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nbformat.write(nb, tmp_path / "reopen.ipynb")
    widgets = tmp_path / "settings" / "@jupyter-widgets" / "jupyterlab-manager"
    widgets.mkdir(parents=True)
    (widgets / "plugin.jupyterlab-settings").write_text('{"saveState": true}')  # the harder reopen: F4
    with lab_server(tmp_path, "reopen.ipynb") as url:
        yield url, tmp_path


def shot(page, name: str) -> None:
    """The page, and each flowlab output on its own (the notebook scrolls inside the page)."""
    if SHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
        for i in range(outputs(page).count()):
            out = outputs(page).nth(i)
            out.scroll_into_view_if_needed()
            out.screenshot(path=str(SHOTS / f"{name}_output{i + 1}.png"))


def shut_down_kernels(url: str) -> None:
    """Shut the notebook's kernel down through the server's REST API, as closing it and shutting it down does."""
    base, token = url.split("/lab/")[0], url.split("token=")[1]
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}") as r:
        sessions = json.load(r)
    for s in sessions:
        req = urllib.request.Request(f"{base}/api/sessions/{s['id']}?token={token}", method="DELETE")
        urllib.request.urlopen(req).close()


def outputs(page):
    """The cells' flowlab outputs, in order."""
    return page.locator(".jp-OutputArea-output.flowlab-mime")


def shown_titles(page, n: int, timeout_ms: int = 120_000) -> list[str]:
    """The title each of the first n flowlab outputs shows, once each has drawn its graph."""
    outs = outputs(page)
    for i in range(n):
        outs.nth(i).locator(".fl-node").first.wait_for(timeout=timeout_ms)
    return [outs.nth(i).locator(".fl-title").first.inner_text() for i in range(n)]


def no_widget_error_text(page, seconds: float = 4.0) -> None:
    """None of ipywidgets' placeholder or error texts is visible, also after its 2 s model lookup gave up."""
    time.sleep(seconds)
    for text in ERROR_TEXT:
        visible = [e for e in page.get_by_text(text).all() if e.is_visible()]
        assert not visible, f"{text!r} is shown"


def new_page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    page.on("dialog", lambda d: d.dismiss())
    return page


def test_a_reopened_notebook_shows_the_views_it_showed_live(lab):
    from playwright.sync_api import sync_playwright

    url, tmp_path = lab
    path = tmp_path / "reopen.ipynb"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = new_page(browser)
        try:
            # -- live: run, switch the first output to the jobs view, save ------------------------------------
            page.goto(url)
            page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=90_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            first = outputs(page).first
            first.locator("xpath=self::*[@data-flowlab-mode='widget']").wait_for(timeout=180_000)
            page.locator(".jp-Cell").nth(2).locator(".jp-InputArea-prompt", has_text="[3]").wait_for(timeout=180_000)
            live_count = outputs(page).count()
            plan_title = first.locator(".fl-title").first.inner_text()
            first.evaluate("e => { e.dataset.probe = 'kept'; }")  # to tell this element from a new one
            first.locator(".fl-view-switch").select_option("jobs")
            first.locator(".fl-title", has_text="job set").wait_for(timeout=60_000)
            jobs_title = first.locator(".fl-title").first.inner_text()
            assert jobs_title != plan_title
            shot(page, "reopen_1_live_jobs_view")
            page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
            page.locator(".jp-mod-dirty").wait_for(state="detached", timeout=30_000)
            time.sleep(1)
            saved = nbformat.read(path, as_version=4)
            out1 = saved.cells[1].outputs[-1]
            assert out1["metadata"].get("flowlab", {}).get("view") == "jobs", out1["metadata"]
            assert out1["data"][JOBSET]["title"] == jobs_title
            assert "application/vnd.jupyter.widget-state+json" in saved.metadata.get("widgets", {})
            # writing the view into the output kept the live widget (same element, no redraw from the saved data)
            assert first.get_attribute("data-probe") == "kept" and first.get_attribute("data-flowlab-mode") == "widget"
            # the 2-device cell saved its payload too (it showed a RenderError traceback before the SVG fallback)
            assert any(JOBSET in o.get("data", {}) for o in saved.cells[2].outputs), saved.cells[2].outputs
            assert live_count == 2
            page.close()

            # -- the page reloaded, its kernel alive: the live widgets come back (as before), on the jobs view -------
            page = new_page(browser)
            page.goto(url)
            live = page.locator(".flowlab-mime[data-flowlab-mode='widget']")
            for i in range(live_count):
                live.nth(i).locator(".fl-view-switch").wait_for(timeout=120_000)
            assert live.first.locator(".fl-title").first.inner_text() == jobs_title
            no_widget_error_text(page, 0.5)
            page.close()
            shut_down_kernels(url)

            # -- (b) no kernel, widget state saved: the saved views, the jobs view first -----------------------
            page = new_page(browser)
            base = url.split("/lab/")[0]
            page.goto(f"{base}/lab/workspaces/nokernel?reset&token={url.split('token=')[1]}")
            page.wait_for_function("window.jupyterapp && window.jupyterapp.docRegistry.getWidgetFactory('Notebook')",
                                   timeout=90_000)
            # the "No Kernel" choice: the notebook factory asks for no kernel
            page.evaluate("""() => { const f = window.jupyterapp.docRegistry.getWidgetFactory('Notebook');
                                     Object.defineProperty(f, 'preferKernel', {get: () => false}); }""")
            page.evaluate("window.jupyterapp.commands.execute('docmanager:open', {path: 'reopen.ipynb'})")
            page.locator(".jp-NotebookPanel-toolbar", has_text="No Kernel").wait_for(timeout=60_000)
            titles = shown_titles(page, live_count)
            assert titles[0] == jobs_title, titles  # (c)
            no_widget_error_text(page)
            assert outputs(page).count() == live_count
            assert page.locator(".flowlab-mime[data-flowlab-mode='static']").count() == live_count
            shot(page, "reopen_2_no_kernel")
            page.close()
            shut_down_kernels(url)

            # -- (a) a fresh kernel (JupyterLab's default): the saved views, no widget errors -----------------
            page = new_page(browser)
            page.goto(url.replace("/lab/tree/", "/lab/workspaces/fresh/tree/").replace("?token", "?reset&token"))
            page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=90_000)
            titles = shown_titles(page, live_count)
            assert titles[0] == jobs_title, titles  # (c)
            no_widget_error_text(page)
            assert page.locator(".flowlab-mime[data-flowlab-mode='static']").count() == live_count
            first = outputs(page).first
            first.locator(".fl-views button", has_text="plan").click()  # the other saved view is one click away
            first.locator(".fl-title", has_text=plan_title).wait_for(timeout=30_000)
            shot(page, "reopen_3_fresh_kernel")

            # -- (d) re-run in that kernel: the live plan browsers again ---------------------------------------
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.locator(".jp-Cell").nth(2).locator(".jp-InputArea-prompt", has_text="[3]").wait_for(timeout=180_000)
            live = page.locator(".flowlab-mime[data-flowlab-mode='widget']")
            for i in range(live_count):
                live.nth(i).locator(".fl-view-switch").wait_for(timeout=120_000)
            assert live.count() == live_count
            assert live.first.get_by_role("button", name="debug", exact=True).is_visible()
            no_widget_error_text(page, 0.5)
            shot(page, "reopen_4_rerun_live")
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
