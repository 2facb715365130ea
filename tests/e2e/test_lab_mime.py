"""A saved notebook with flowlab's mime outputs, opened in JupyterLab with no kernel: the prebuilt labextension
(extension/labextension, found through JUPYTER_PATH as the wheel's share/jupyter/labextensions/flowlab would be) draws
the jobset graph and a recorded run whose slider moves the highlight (version-1 payloads, as older flowlab saved
them), a Plan stored as version 2 (gzipped, as flowlab saves it now), and a newer payload version says so."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

from tests.e2e.harness import CHROMIUM, CHROMIUM_ARGS, ROOT, lab_server, least_contrast, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (the e2e extra)")

FIXTURES = ROOT / "tests" / "e2e" / "fixtures"
SHOTS = os.environ.get("FLOWLAB_E2E_SHOTS")


def output(kind: str, name: str) -> nbformat.NotebookNode:
    payload = json.loads((FIXTURES / name).read_text())
    return nbformat.v4.new_output("display_data", data={
        f"application/vnd.flowlab.{kind}+json": payload, "text/plain": f"<flowlab {kind}: {payload['title']}>",
        "image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'></svg>"})


def notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    cells = [("jobset", "jobset_mlp30.json"), ("run", "run_small.json"), ("run", "future.json"),
             ("plan", "stored_pad_plan.json")]
    for i, (kind, name) in enumerate(cells):
        cell = nbformat.v4.new_code_cell(f"# output {i}: {name}", execution_count=i + 1)
        cell.outputs = [output(kind, name)]
        nb.cells.append(cell)
    nb.metadata = {}  # no kernelspec: nothing to start
    nbformat.write(nb, path)


@pytest.fixture
def lab(tmp_path):
    notebook(tmp_path / "saved.ipynb")
    with lab_server(tmp_path, "saved.ipynb") as url:
        yield url, tmp_path


def test_saved_notebook_renders_graph_and_run_without_a_kernel(lab):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    url, tmp_path = lab
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1400})
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        try:
            page.goto(url)
            page.wait_for_selector(".flowlab-mime .fl-node", timeout=90_000)
            # No kernelspec: Lab asks which kernel to start; answer "No Kernel" (the outputs draw either way).
            try:
                page.locator(".jp-Dialog").get_by_role("button", name="No Kernel", exact=True).click(timeout=15_000)
            except PlaywrightTimeout:
                pass
            page.wait_for_function("document.querySelectorAll('.flowlab-mime').length === 4", timeout=30_000)
            mimes = page.locator(".flowlab-mime")
            jobset, run, future, stored = mimes.nth(0), mimes.nth(1), mimes.nth(2), mimes.nth(3)
            assert jobset.locator("text=train_job (user)").count() >= 1
            assert "newer flowlab (payload version 3)" in future.locator(".fl-error").text_content()
            stored.scroll_into_view_if_needed()
            stored.locator(".fl-node").first.wait_for(timeout=30_000)  # decoded in the browser, then drawn
            assert stored.locator(".fl-error").count() == 0 and stored.locator(".fl-node").count() >= 5
            assert "Plan: 18 tasks" in stored.locator(".fl-title").text_content()
            assert "<flowlab run:" in future.locator(".fl-fallback").text_content()
            run.scroll_into_view_if_needed()
            assert "acting" in run.locator('[data-id="t:0"]').get_attribute("class")
            run.locator(".fl-slider").evaluate("e => { e.value = '4'; e.dispatchEvent(new Event('input')); }")
            assert "acting" in run.locator('[data-id="t:4"]').get_attribute("class")
            assert "acting" not in run.locator('[data-id="t:0"]').get_attribute("class")
            assert "kernel tier" in run.locator(".fl-run .fl-panel").first.text_content()
            # The op named like HTML is text in the act header, and no image element or dialog appeared.
            assert "<img src=x onerror=alert(1)>" in run.locator(".fl-panel h4").first.text_content()
            assert page.locator(".flowlab-mime img").count() == 0 and dialogs == []
            # The mime renderer under JupyterLab's dark theme: every text stays readable (WCAG AA).
            page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
            page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
            jobset.locator(".fl-node").first.click()
            low = [r for r in least_contrast(page) if r[2] < 4.5]
            assert not low, "text below 4.5:1 contrast: " + "; ".join(f"{s} {t!r} {r:.2f}" for s, t, r in low)
            if SHOTS:
                Path(SHOTS).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(Path(SHOTS) / "lab_saved_notebook.png"))
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"))
            raise
        finally:
            browser.close()
