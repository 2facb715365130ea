"""End to end in a real browser: JupyterLab on 127.0.0.1 driven by Playwright through Debian's chromium.

Runs the quickstart notebook (its plan browser and debugger widget), clicks a Plan node and reads the detail pane,
steps the debugger three acts and reads the blob inspector. Skipped only where chromium or playwright is absent
(.ci/run installs both)."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed")
if not os.path.exists(CHROMIUM):
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)

QUICKSTART = Path(__file__).resolve().parents[2] / "notebooks" / "01_quickstart.ipynb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    nbformat.write(nbformat.read(QUICKSTART, as_version=4), tmp_path / "e2e.ipynb")  # the quickstart, as shipped
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"))
    token, port = secrets.token_hex(16), free_port()
    log = open(tmp_path / "server.log", "w")  # closed below
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}",
         "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start: " + (tmp_path / "server.log").read_text()[-2000:])
        yield f"{base}/lab/tree/e2e.ipynb?token={token}", tmp_path
    finally:
        server.terminate()
        server.wait(15)
        log.close()


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
            node = ".flowlab-plan-browser svg g.node"
            page.wait_for_selector(node, timeout=90_000)
            # Click the reflection_pad2d task in the Plan: the detail pane shows its op.
            page.locator(".flowlab-plan-browser g.node", has_text="reflection_pad2d_0").first.click()
            detail = page.locator(".flowlab-plan-browser .detail")
            detail.filter(has_text="type: reflection_pad2d").wait_for(timeout=30_000)
            assert "reflection_pad2d_0/y_0: f32[2,1,5,5]" in detail.inner_text()
            # Step three acts: Input_0, reflection_pad2d_0, Return_0 of the user job.
            status = page.locator(".flowlab-debugger .status")
            status.wait_for(timeout=60_000)
            for expected in ("Input_0", "reflection_pad2d_0", "Return_0"):
                page.locator(".flowlab-debugger button.cmd-step").click()
                status.filter(has_text="acted: #").filter(has_text=expected).wait_for(timeout=30_000)
            blob = page.locator(".flowlab-debugger .blob")
            blob.filter(has_text="min 0 max 17").wait_for(timeout=30_000)
            text = blob.inner_text()
            assert "reflection_pad2d_0/y_0 : f32[2, 1, 5, 5]" in text and "nan 0" in text
            assert page.locator(".flowlab-debugger svg.histogram rect").count() == 10  # one bar per bin
            if os.environ.get("FLOWLAB_E2E_SCREENSHOT"):  # for a person to look at
                page.screenshot(path=os.environ["FLOWLAB_E2E_SCREENSHOT"], full_page=True)
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
