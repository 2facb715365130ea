"""End to end in a real browser: JupyterLab on 127.0.0.1 driven by Playwright through Debian's chromium.

Runs the quickstart notebook (%%flowjob's plan browser and the debugger widget, both drawn by the extension/ front
end), clicks a Plan task and reads the detail pane, steps the debugger three acts and reads the blob inspector.
Skipped only where chromium or playwright is absent (.ci/run installs both)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest

from .harness import lab_server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed")
if not os.path.exists(CHROMIUM):
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)

QUICKSTART = Path(__file__).resolve().parents[2] / "notebooks" / "01_quickstart.ipynb"


@pytest.fixture
def lab(tmp_path):
    nbformat.write(nbformat.read(QUICKSTART, as_version=4), tmp_path / "e2e.ipynb")  # the quickstart, as shipped
    with lab_server(tmp_path, "e2e.ipynb") as url:
        yield url, tmp_path


def test_plan_browser_and_debugger_in_jupyterlab(lab):
    url, tmp_path = lab
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        try:
            page.goto(url)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget && "
                                   "window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel",
                                   timeout=90_000)
            page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=90_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            # The %%flowjob output is the plan browser: its first view fits the Plan; click a task for its detail.
            task = page.locator(".fl-node", has_text="reflection_pad2d_0").first
            task.wait_for(timeout=90_000)
            task.click()
            title = page.locator(".fl-detail-title", has_text="reflection_pad2d_0 (NormalForward)").first
            title.wait_for(timeout=30_000)
            assert page.locator("text=f32[2,1,5,5]").count() >= 1  # its register's blob, in the detail pane
            # The debugger widget (last cell) starts before Input_0: three steps act Input_0, pad and Return_0.
            debugger = page.locator(".fl-debugger").last
            debugger.wait_for(timeout=60_000)
            status = debugger.locator(".fl-status-line")
            for _ in range(3):
                before = status.inner_text()
                debugger.locator("button", has_text="step").first.click()
                page.wait_for_function("([el, text]) => el.textContent !== text", arg=[status.element_handle(), before],
                                       timeout=30_000)
            debugger.locator("text=not yet written").wait_for(state="detached", timeout=30_000)
            assert "17" in debugger.inner_text()  # the inspected blob's max, once written
            if os.environ.get("FLOWLAB_E2E_SCREENSHOT"):  # for a person to look at
                page.screenshot(path=os.environ["FLOWLAB_E2E_SCREENSHOT"], full_page=True)
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
