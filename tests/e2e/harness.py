"""A static server for the browser harness (tests/e2e/harness.html loads the built widget module with a fake
anywidget model) and a chromium launcher; used by test_views_browser.py and benchmarks/browser_views.py."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (the e2e extra)"
    if not os.path.exists(CHROMIUM):
        return "Debian's chromium is not installed (apt-get install chromium)"
    return None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # the test output is the place for failures, not requests
        pass


@contextlib.contextmanager
def serve() -> Iterator[str]:
    """Serve the repository root on 127.0.0.1 (ES modules do not load from file://)."""
    handler = functools.partial(_Quiet, directory=str(ROOT))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/tests/e2e/harness.html"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def harness_page(width: int = 1200, height: int = 1000) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with serve() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url)
            page.wait_for_function("window.harnessReady === true", timeout=30_000)
            yield page
        finally:
            browser.close()
