"""`make lab` (dry runs): root gets --allow-root, HOST/PORT/LAB_ARGS pass through, and installs happen once."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def dry_run(cwd: Path, *args: str) -> list[str]:
    # --no-print-directory: under `make test` (CI) this make is a sub-make, which would print "Entering directory"
    out = subprocess.run(["make", "--no-print-directory", "-n", "lab", *args], cwd=cwd, capture_output=True,
                         text=True, check=True)
    return out.stdout.splitlines()


def jupyter_line(lines: list[str]) -> str:
    return next(line for line in lines if "jupyter lab" in line)


def test_root_gets_allow_root_and_others_do_not():
    assert "--allow-root" in jupyter_line(dry_run(ROOT, "USER_ID=0")).split()
    assert "--allow-root" not in jupyter_line(dry_run(ROOT, "USER_ID=1000")).split()
    as_me = jupyter_line(dry_run(ROOT)).split()
    assert ("--allow-root" in as_me) == (os.getuid() == 0)


def test_host_port_and_extra_args():
    words = jupyter_line(dry_run(ROOT, "HOST=0.0.0.0", "PORT=9999", "LAB_ARGS=--no-browser")).split()
    assert {"--ServerApp.ip=0.0.0.0", "--ServerApp.port=9999", "--no-browser"} <= set(words)
    default = jupyter_line(dry_run(ROOT)).split()
    assert {"--ServerApp.ip=127.0.0.1", "--ServerApp.port=8888", "--ServerApp.root_dir=notebooks"} <= set(default)


def test_installs_once(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").write_text("")
    first = dry_run(tmp_path)
    assert any("pip install" in line for line in first)  # a fresh checkout installs
    time.sleep(0.01)
    (tmp_path / ".venv").mkdir()
    for stamp in (".installed", ".lab-installed"):
        (tmp_path / ".venv" / stamp).touch()
    again = dry_run(tmp_path)
    assert not any("pip" in line for line in again) and len(again) == 1  # then only starts JupyterLab
