"""The built front end is committed (so `make test` and CI need no Node): these tests fail when extension/'s
sources changed without a rebuild (`make ext`), or when a built output is missing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "extension"
INPUTS = ["src", "package.json", "package-lock.json", "tsconfig.json", "install.json"]  # as extension/scripts/stamp.mjs


def sources_digest() -> str:
    files: list[str] = []
    for name in INPUTS:
        p = EXT / name
        files += [f.relative_to(EXT).as_posix() for f in (p.rglob("*") if p.is_dir() else [p]) if f.is_file()]
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(f.encode() + b"\0")
        h.update((EXT / f).read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def test_built_outputs_match_the_sources():
    stamp = json.loads((EXT / "build-stamp.json").read_text())
    assert stamp["sources_sha256"] == sources_digest(), (
        "extension/ sources (src/, package.json, package-lock.json, tsconfig.json, install.json) changed since the "
        "committed build: run `make ext`, then commit flowlab/notebook/static/ and extension/labextension/")


def test_built_outputs_exist():
    widget = ROOT / "flowlab" / "notebook" / "static" / "flowlab_widget.js"
    assert widget.stat().st_size > 10_000
    assert "export" in widget.read_text()[-2000:] or "export{" in widget.read_text()  # an ES module with render()
    lab = EXT / "labextension"
    meta = json.loads((lab / "package.json").read_text())
    assert meta["name"] == "flowlab" and meta["jupyterlab"]["mimeExtension"]
    assert list((lab / "static").glob("remoteEntry.*.js")), "no remoteEntry in extension/labextension/static"
    install = json.loads((EXT / "install.json").read_text())
    assert install["packageManager"] == "python" and install["packageName"] == "flowlab"


def test_wheel_ships_the_labextension():
    text = (ROOT / "pyproject.toml").read_text()
    assert '"extension/labextension" = "share/jupyter/labextensions/flowlab"' in text
    assert '"extension/install.json" = "share/jupyter/labextensions/flowlab/install.json"' in text
