"""A live JupyterLab in chromium running a two-cell notebook (a setup cell, then ``make()``), for the benchmarks
that time the live widgets (_live_comm.py, _live_debugger.py): the notebook, the server, the browser and the first
run, written once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def live_lab(root: Path, setup: str, drawn: str) -> Iterator[Any]:
    """Write ``root/live.ipynb`` (``setup``, then ``make()``), open it in JupyterLab, run every cell and wait for
    the ``drawn`` selector (setup and a first, warming view); yields the page. The browser closes on leaving."""
    import nbformat
    from playwright.sync_api import sync_playwright

    from tests.e2e.harness import CHROMIUM, CHROMIUM_ARGS, lab_server

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(setup), nbformat.v4.new_code_cell("make()")]
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nbformat.write(nb, root / "live.ipynb")
    with lab_server(root, "live.ipynb") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            page.goto(url)
            page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=90_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_selector(drawn, timeout=300_000)
            yield page
        finally:
            browser.close()
