"""The benchmark scripts run (quick mode) and print the figures the issues ask for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize("script, labels", [
    ("runtime_overhead.py", ["pad_Job, protocol act by act: overhead per act", "pad_Job, replayed: overhead per act",
                               "50-op chain, replayed: overhead per act", "target <= 2 us", "target <= 3 us"]),
    ("compile_time.py", ["compile_jobs (passes, system jobs, Plan), median", "jobs / tasks / regsts / mem blocks"]),
    ("startup.py", ["pad_Job: import + first call, warm cache", "pad_Job: import + first call, empty cache",
                    "MLP 784-512-10 train: start to end of first call, warm", "MLP ... 9th call (fusion)"]),
    ("mlp_vs_torch.py", ["MLP 784-512-10, batch 100: actors / acts per step", "tiny MLP 64-32-10, batch 8",
                         "ratio flowlab step / GEMM floor", "(target <= 1.15)", "(target <= 0.05)",
                         "bound: the fused segment alone"]),
    ("lenet_vs_torch.py", ["one step against torch's (rtol 1e-4)", "ratio flowlab / torch", "GEMM floor",
                           "flowlab kernels alone, summed"]),
])
def test_benchmark_prints_its_figures(script, labels):
    result = subprocess.run([sys.executable, str(BENCH / script), "--quick"], capture_output=True, text=True,
                            timeout=300, cwd=BENCH)
    assert result.returncode == 0, result.stderr
    for label in labels:
        assert label in result.stdout
