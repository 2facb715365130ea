"""The benchmark scripts run (quick mode) and print the figures the issues ask for."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


TORCH = importlib.util.find_spec("torch") is not None
NO_TORCH = "torch not installed"  # what a torch comparison prints in its place (the test extra has no torch)


@pytest.mark.parametrize("script, labels, torch_labels", [
    ("runtime_overhead.py", ["pad_Job, protocol act by act: overhead per act", "pad_Job, replayed: overhead per act",
                               "50-op chain, replayed: overhead per act", "target <= 2 us", "target <= 3 us",
                               "pad_Job, protocol act by act: acts by task type, per call", "  ReentrantLock",
                               "rest of a call (session, launch, loop)"], None),
    ("compile_time.py", ["compile_jobs (passes, system jobs, Plan), median", "jobs / tasks / regsts / mem blocks",
                         "CPU: ", "8 layers, 2 devices: ", "first call per task, largest job / smallest"], None),
    ("startup.py", ["pad_Job: import + first call, warm cache", "pad_Job: import + first call, empty cache",
                    "MLP 784-512-10 train: start to end of first call, warm", "MLP ... 9th call (fusion)",
                    "start until every kernel is on Numba, warm (tiered)", "(target <= 1 s:",
                    "tiered / Numba-only, start to end of first call, warm"], None),
    ("parallel_runtime.py", ["pad_Job, one scheduler thread", "pad_Job, a thread per Plan thread",
                             "two jobs on two devices: throughput, parallel / one thread",
                             "data-parallel MLP, 1 device: step", "data-parallel MLP, 2 devices: step",
                             "2 devices, distributed_split / 1 device",
                             "distributed_split: work bound", "distributed_split: where it goes, lane 1",
                             "budget for 1.6x", "ideal step by hand: throughput 2 threads / 1 thread",
                             "flowlab 2 devices, distributed_split against the ideal step",
                             "ideal step by hand vs the 1.6x target",
                             "interleaved: two bare GEMM threads / one", "/ the ideal step, per round",
                             "2 devices, the policy's choice: lanes kept in",
                             "the policy's choice / 2 devices, one thread (never below 1.0x wanted)"], None),
    ("mlp_vs_torch.py", ["CPU: ", "MLP 784-512-10, batch 100: actors / acts per step", "tiny MLP 64-32-10, batch 8"],
     ["ratio flowlab step / GEMM floor", "(target <= 1.15)", "(target <= 0.05)", "bound: the fused segment alone",
      "function calls per flowlab step (replayed)", "one generated function",
      "kernels of the fused step, one by one in its order", "hidden-weight_optimizer",
      "bound: the floor + the others' arrays each read or written once",
      "outside the segment within the same calls", "ratio flowlab step / GEMM floor, paired rounds",
      "bound of this design: the above + the call's Python outside its segment"]),
    ("payload_size_time.py", ["30-layer MLP train: plan payload", "synthetic 10,000-task Plan: plan payload",
                               "%%flowjob 30-layer MLP train job, warm, with its output bundle",
                               "30-layer MLP train: plan stored in the .ipynb, v1 -> v2", "with v1 payloads ->",
                               "draw in chromium from stored JSON, v1 / v2",
                               "live widget, 30-layer MLP plan browser: widget state saved into the .ipynb",
                               "live widget, synthetic 10,000-task Plan: creation to first box",
                               "live debugger, 30-layer MLP train job (754 actors): one step: comm bytes",
                               "kernel-side publish per step, every row -> changed rows"], None),
    ("executors.py", ["Each executor against the next simpler one", "tiny MLP 64-32-10 B=8", "callgen vs fused",
                      "lanes vs fused", "threads vs protocol", "per act: pad_Job", "best gain"], None),
    ("time_travel.py", ["CPU: ", "one step back, median over every act of the call", "(target <= 50 ms)",
                        "extra memory per act recorded, median / max", "of which register copies"], None),
    ("mirrored_clone.py", ["clone copies the variables, median", "clone reads them in place, median",
                           "in place / copying, paired rounds", "losses of the last call, bit for bit"], None),
    ("lenet_vs_torch.py", ["LeNet batch 10, 1 thread: flowlab step", "GEMM floor", "flowlab kernels alone, summed",
                           "chain conv_fwd + bias_add + relu + max_pool_2x2"],
     ["one step against torch's (rtol 1e-4)", "ratio flowlab / torch", "bound: the target leaves for all but the GEMMs",
      "flowlab's step beyond its GEMM floor", "the chains' saving", "the bound: torch's step / floor"]),
])
def test_benchmark_prints_its_figures(script, labels, torch_labels):
    """The torch comparisons print their ratios where torch is installed (`flowlab[bench]`) and say that it is
    not elsewhere; either way the script exits 0 and prints flowlab's own figures."""
    result = subprocess.run([sys.executable, str(BENCH / script), "--quick"], capture_output=True, text=True,
                            timeout=300, cwd=BENCH)
    assert result.returncode == 0, result.stderr
    for label in labels:
        assert label in result.stdout
    if torch_labels is not None:
        for label in torch_labels if TORCH else [NO_TORCH]:
            assert label in result.stdout, result.stdout


@pytest.mark.parametrize("script, labels", [
    ("gpu_gemm.py", ["Tiled GEMM on the GPU (issue 12)", "flowlab tiled GEMM, a @ b, tile", "a @ b^T", "TFLOP/s",
                     "torch (cuBLAS)", "flowlab implicit-GEMM conv2d (image 0 equals NumPy's)",
                     "torch conv2d (cuDNN)"]),
    ("gpu_mlp.py", ["MLP 784-512-10, batch 100: flowlab step", "MLP 64-32-10, batch 8: flowlab step",
                    "MLP 64-32-10, batch 8: first"]),
])
def test_gpu_benchmark_runs_quick_in_the_simulator_or_on_a_gpu(script, labels):
    """--quick runs the GPU benchmarks at tiny sizes in Numba's simulator (the tests' default, set by conftest.py
    before Numba's import; each checks its products or losses against NumPy's first), or at real sizes on a GPU
    (NUMBA_ENABLE_CUDASIM=0). Without either it says that no GPU is present."""
    from flowlab.kernels import cuda_available

    result = subprocess.run([sys.executable, str(BENCH / script), "--quick"], capture_output=True, text=True,
                            timeout=600, cwd=BENCH)
    assert result.returncode == 0, result.stderr[-3000:]
    if not cuda_available():
        assert "no GPU: skipped" in result.stdout, result.stdout
        return
    for label in labels:
        assert label in result.stdout, result.stdout


def test_a_direct_run_times_one_blas_thread_although_numpy_loads_before_util():
    """Every benchmark imports NumPy before `_util` (import order), and OpenBLAS reads OPENBLAS_NUM_THREADS only when
    it loads: `_util` must pin the libraries already loaded, or a direct run (not `make bench`) times NumPy's BLAS
    on every core against torch on one. (On a 1-core box the default is 1 thread and this cannot fail.)"""
    pytest.importorskip("threadpoolctl")
    probe = ("import numpy, _util\nfrom threadpoolctl import threadpool_info\n"
             "print(sorted({i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'}))")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    got = subprocess.run([sys.executable, "-c", probe], cwd=BENCH, env=env, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "[1]", got.stdout
