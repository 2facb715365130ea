"""A static server for the browser harness (tests/e2e/harness.html loads the built widget module with a fake
anywidget model) and a chromium launcher; used by test_views_browser.py and benchmarks/browser_views.py."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def lab_server(tmp_path: Path, notebook: str) -> Iterator[str]:
    """JupyterLab on 127.0.0.1 over tmp_path (recipe: shared/reference/jupyter-ecosystem.md section 4), with the
    prebuilt labextension found through JUPYTER_PATH, as the wheel's share/jupyter/labextensions/flowlab would be.
    Yields the notebook's URL."""
    data = tmp_path / "jpath" / "labextensions"
    data.mkdir(parents=True)
    (data / "flowlab").symlink_to(ROOT / "extension" / "labextension")
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"),
               JUPYTER_PATH=str(tmp_path / "jpath"), PYTHONPATH=str(ROOT))
    token, port = secrets.token_hex(16), _free_port()
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
            raise RuntimeError("JupyterLab did not start: " + (tmp_path / "server.log").read_text()[-2000:])
        yield f"{base}/lab/tree/{notebook}?token={token}"
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:  # its shutdown waits on a kernel (a loaded box): the test is over, end it
            server.kill()
            server.wait(15)
        log.close()


# WCAG contrast of the text of every element matching each selector against what is drawn behind it: the first
# ancestor with a background colour for HTML; for SVG text the fill of its node's shape, its group's header or, for
# an edge label, its halo (paint-order: stroke). Returns [selector, text, ratio] of the least readable match per
# selector (selectors that match nothing are left out).
CONTRAST_JS = (Path(__file__).parent / "contrast.js").read_text().split("\n", 1)[1]  # after its comment line

# What a person reads in every view: node and group labels, edge labels, the detail pane, the legend, the debugger's
# status, controls, actors table (the next actor's row among them), inspector and panels.
READABLE_TEXT = [
    ".fl-node .fl-label", ".fl-node .fl-type", ".fl-node.next .fl-label", ".fl-node.sel .fl-label",
    ".fl-node.match .fl-label", ".fl-cluster-label", ".fl-edge-label", ".fl-detail-title", ".fl-detail-section",
    ".fl-detail table.fl-kv th", ".fl-detail table.fl-kv td", ".fl-detail .fl-muted", ".fl-lanes span",
    ".fl-title", ".fl-count", ".fl-root button", ".fl-root input", ".fl-root select", ".fl-status-line",
    "table.fl-actors th", "table.fl-actors td", "table.fl-actors tr.next td", ".fl-panel b", ".fl-panel h4",
    ".fl-panel .fl-muted", ".fl-panel table.fl-kv td", ".fl-warn", ".fl-error", ".fl-mem text", ".fl-hist text",
]


def least_contrast(page: object, selectors: list[str] = READABLE_TEXT) -> list[tuple[str, str, float]]:
    """[(selector, text, contrast ratio)] of the least readable element per selector on the page."""
    return [tuple(r) for r in page.evaluate(CONTRAST_JS, selectors)]  # type: ignore[attr-defined]


def png_pixels(data: bytes) -> list[list[tuple[int, ...]]]:
    """The pixels of a screenshot (8-bit RGB/RGBA PNG, not interlaced: what chromium writes) as rows of tuples; no
    imaging library is needed for the few small clips the tests compare."""
    import struct
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, _height, depth, colour, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and not interlace, (depth, colour, interlace)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(len(raw) // (stride + 1)):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        prev = line
    return rows


def pixel_difference(a: bytes, b: bytes) -> float:
    """Mean absolute difference per channel (0-255) of two same-sized screenshots."""
    pa, pb = png_pixels(a), png_pixels(b)
    total = sum(abs(x - y) for ra, rb in zip(pa, pb) for qa, qb in zip(ra, rb) for x, y in zip(qa, qb))
    return total / max(1, 3 * sum(len(r) for r in pa))


# Mounts the view widget on a payload in the harness page: page.evaluate(MOUNT, payload)
MOUNT = """async (payload) => {
  const out = document.getElementById('out'); out.replaceChildren();
  const el = document.createElement('div'); out.append(el);
  const mod = await import('/flowlab/notebook/static/flowlab_widget.js');
  const model = new window.flowlab.FakeModel({ payload, selected: '', query: '' });
  window.model = model;
  mod.default.render({ model, el });
}"""
