"""benchmarks/gpu_gemm.py runs: here (no GPU, or the simulator) it says it skipped; on a GPU it prints TFLOP/s."""

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
