"""benchmarks/gpu_gemm.py and gpu_mlp.py run: here (no GPU, or the simulator) they say they skipped; on a GPU they print
their numbers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_gemm_benchmark_skips_without_a_gpu_or_reports_tflops():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_gemm.py"), "--quick"],
                            cwd=ROOT / "benchmarks", env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "no GPU: skipped" in result.stdout or "TFLOP/s" in result.stdout, result.stdout


def test_gpu_mlp_benchmark_skips_without_a_gpu_and_its_simulator_check_matches_numpy():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = str(ROOT / "benchmarks" / "gpu_mlp.py")
    result = subprocess.run([sys.executable, script, "--quick"], cwd=ROOT / "benchmarks", env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "no GPU: skipped" in result.stdout or "ratio flowlab / torch" in result.stdout, result.stdout
    if env.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        check = subprocess.run([sys.executable, script, "--sim-check"], cwd=ROOT / "benchmarks", env=env,
                               capture_output=True, text=True, timeout=600)
        assert check.returncode == 0, check.stderr[-3000:]
        assert "equals NumPy's" in check.stdout, check.stdout
