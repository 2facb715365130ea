"""Runs the TypeScript unit tests of extension/ (payload parsing, versions, escaping, group collapse and edge
aggregation, layout bounds) with `npm test` where Node is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

EXT = Path(__file__).resolve().parents[2] / "extension"


def test_typescript_unit_tests():
    npm = shutil.which("npm")
    if not shutil.which("node") or not npm:
        pytest.skip("node/npm are not on PATH: the TypeScript unit tests of extension/ need Node 20")
    if not (EXT / "node_modules").is_dir():
        # `npm install` (not `npm ci`): it installs the locked versions, and it tolerates the registry reachable here
        # lacking other platforms' optional rspack binaries, which `npm ci` reports as a lock mismatch.
        got = subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=EXT, capture_output=True, text=True,
                             timeout=300)
        if got.returncode:
            pytest.skip(f"`npm install` in extension/ failed (offline?): {got.stderr[-500:]}")
    got = subprocess.run([npm, "test"], cwd=EXT, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stdout[-4000:] + got.stderr[-2000:]
    assert "# fail 0" in got.stdout
