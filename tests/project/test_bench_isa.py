"""benchmarks/_isa.py: ``--isa avx2`` reruns a benchmark in a process where Numba, OpenBLAS and torch each run
their AVX2 code on this machine, and the CPU line says so; an unknown ISA is refused by name."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = f"""import sys
sys.path.insert(0, {str(ROOT / 'benchmarks')!r})
from _isa import rerun_restricted
rerun_restricted()
from _util import cpu_description
import numba
from flowlab.kernels.numba_cpu._numba import cache_dir
print(cache_dir().parent, numba.config.CACHE_DIR == str(cache_dir()))
print(cpu_description())
"""


def _probe(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # this process's flowlab set it
    env.update(PYTHONPATH=str(ROOT), FLOWLAB_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("torch", "threadpoolctl")),
                    reason="the restriction is checked through torch and threadpoolctl")
def test_isa_avx2_restricts_every_library_and_says_so(tmp_path: Path) -> None:
    got = _probe(tmp_path, "--isa", "avx2")
    assert got.returncode == 0, got.stderr[-3000:]
    cache, line = got.stdout.strip().splitlines()
    assert "restricted to AVX2: Numba target haswell (32-byte vectors, micro-kernel 6 rows), torch AVX2" in line, line
    assert line.endswith("OpenBLAS Haswell"), line
    assert cache == f"{tmp_path / 'cache' / 'avx2'} True"  # a FLOWLAB_CACHE_DIR given: its subdirectory, kept


def test_an_unknown_isa_is_refused_by_name(tmp_path: Path) -> None:
    got = _probe(tmp_path, "--isa", "avx3")
    assert got.returncode != 0
    assert "--isa: expected one of ['avx2'], got 'avx3'" in got.stderr
