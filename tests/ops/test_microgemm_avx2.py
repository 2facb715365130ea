"""The GEMM micro-kernel's tests and Winograd's float32 algorithm tests again, in a process whose Numba target is
Haswell (AVX2, 16 ymm registers): the block takes the AVX2 shape there (6 x 16 float32) and computes the same
products against NumPy float64, and the block-transposed gathers and scatters give NumPy's bits. NUMBA_CPU_NAME
alone keeps the host's features (AVX-512 included): the empty NUMBA_CPU_FEATURES makes the named CPU's own features
the target's. A fresh cache directory: no kernel compiled for the host is loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HASWELL = {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ""}


def _run(args: list[str], tmp_path: Path, target: dict[str, str] = HASWELL) -> subprocess.CompletedProcess:
    # without NUMBA_CACHE_DIR, which this process's flowlab set to its own cache: the child's follows FLOWLAB_CACHE_DIR
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(target, FLOWLAB_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def test_the_microgemm_and_winograd_tests_pass_on_an_avx2_target(tmp_path: Path) -> None:
    shape = _run(["-c", "from flowlab.kernels.numba_cpu import microgemm as g; import numpy as np; "
                        "print(g.VECTOR_BYTES, g.MR, g.nr(np.float32))"], tmp_path)
    assert shape.returncode == 0, shape.stderr
    assert shape.stdout.split() == ["32", "6", "16"]
    tests = _run(["-m", "pytest", "-p", "no:cacheprovider", "-q", "tests/ops/test_microgemm.py",
                  "tests/ops/test_winograd.py", "tests/ops/test_gemm_nt.py", "-k",
                  "microgemm or numpys_bit or (every_algorithm and float32) or gemm_nt or aligned"],
                 tmp_path)
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]


def test_measured_choices_are_keyed_by_the_compile_target(tmp_path: Path) -> None:
    """conv_autotune.json and matmul_choice.json key a measured choice by the CPU Numba compiles for: an AVX2
    process on this host must not read the choices an AVX-512 process measured (both keyed by the host's name
    before), while the host's own target keeps its bare name, the key those files already hold."""
    import llvmlite.binding as llvm

    from flowlab.kernels.numba_cpu._numba import target_cpu

    code = "from flowlab.kernels.numba_cpu._numba import target_cpu; print(target_cpu())"
    haswell = _run(["-c", code], tmp_path)
    assert haswell.returncode == 0, haswell.stderr
    name_only = _run(["-c", code], tmp_path, {"NUMBA_CPU_NAME": "haswell"})
    assert target_cpu() == llvm.get_host_cpu_name()
    assert haswell.stdout.strip().startswith("haswell[")
    assert name_only.stdout.strip().startswith("haswell[")
    assert name_only.stdout.strip() != haswell.stdout.strip()  # the host's features under Haswell's name differ
