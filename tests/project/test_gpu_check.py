"""benchmarks/gpu_check.py (``make gpu-check``): the one command that runs every GPU check of issue 12 and writes
one report. Here it is run in Numba's simulator on a narrow selection, and without the simulator, where this
machine (no GPU) must be told apart from a passing run."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def _run(tmp_path: Path, *args: str, sim: bool) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1" if sim else "0"}
    return subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT, env=env)


def test_without_a_gpu_or_the_simulator_it_says_no_gpu_is_present_and_exits_2(tmp_path):
    result = _run(tmp_path, "--steps", "probe", sim=False)
    report = (tmp_path / "report.md").read_text()
    if result.returncode == 2:
        assert "no GPU present" in result.stdout and "--sim" in result.stdout, result.stdout
        assert "| probe | NO GPU |" in report and "Run on the GPU (NUMBA_ENABLE_CUDASIM=0)" in report
    else:  # a machine with a GPU: the probe names it
        assert result.returncode == 0, result.stdout + result.stderr
        assert "| probe | PASS |" in report and "compute capability" in report


def test_in_the_simulator_it_runs_the_selected_tests_and_reports_the_sanitizer_as_needing_a_gpu(tmp_path):
    result = _run(tmp_path, "--sim", "--steps", "tests,memcheck", "-k", "placement_on_a_gpu_this_machine_lacks",
                  sim=True)
    assert result.returncode == 0, result.stdout + result.stderr
    report = (tmp_path / "report.md").read_text()
    assert "Run on Numba's CUDA simulator" in report
    assert "| tests | PASS |" in report and "1 passed, 0 failed, 0 error, 0 skipped" in report, report
    assert "| memcheck | NOT RUN |" in report and "needs a GPU" in report
    assert "test_a_placement_on_a_gpu_this_machine_lacks_is_an_error_naming_it" in (tmp_path / "tests.log").read_text()


def test_a_pytest_run_that_does_not_pass_fails_the_check(tmp_path):
    """A pytest run that ends in error (here a -k expression it cannot parse) is a failed check, exit 1."""
    result = _run(tmp_path, "--sim", "--steps", "tests", "-k", "not (", sim=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "| tests | FAIL |" in (tmp_path / "report.md").read_text()


def _gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_mlp_targets_are_marked_met_or_missed_from_the_benchmarks_ratio_rows():
    output = ("MLP 784-512-10, batch 100: ratio flowlab / torch (target <= 1.0x)  0.84x\n"
              "MLP 64-32-10, batch 8: ratio flowlab / torch (target <= 0.3x)      0.41x\n")
    assert _gpu_check().mlp_verdicts(output) == [
        "target MLP 784-512-10, batch 100: flowlab / torch <= 1.0x: met (0.84x)",
        "target MLP 64-32-10, batch 8: flowlab / torch <= 0.3x: MISSED (0.41x)"]
    assert _gpu_check().mlp_verdicts("MLP 64-32-10, batch 8: torch  torch with CUDA not installed")[1].endswith(
        "not measured (no torch)")


def test_steps_past_the_budget_are_reported_not_run(tmp_path):
    """--budget: a run in a fixed window (a GPU machine lent for 10 minutes a command) ends with a report that says
    which steps it left out, instead of being killed mid-step with none."""
    result = _run(tmp_path, "--sim", "--steps", "tests,gemm", "--budget", "0", sim=True)
    assert result.returncode == 0, result.stdout + result.stderr
    report = (tmp_path / "report.md").read_text()
    assert "| probe | PASS |" in report
    assert "| tests | NOT RUN |" in report and "| gemm | NOT RUN |" in report and "out of the --budget" in report


def test_an_explicit_numba_enable_cudasim_0_reaches_the_cuda_tests(tmp_path):
    """tests/conftest.py defaults the simulator on but keeps an explicit 0 (what gpu-check's tests step sets): here,
    without a GPU, the CUDA tests then skip saying the simulator is off; on a GPU they run on it."""
    gpu = _run(tmp_path, "--steps", "probe", sim=False).returncode == 0
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "pytest", "tests/cuda/test_gpu_plan.py", "-rs", "-p",
                             "no:cacheprovider", "-k", "placement_on_a_gpu_this_machine_lacks"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    if gpu:
        assert "1 passed" in result.stdout, result.stdout
    else:
        assert "1 skipped" in result.stdout and "the simulator is off" in result.stdout, result.stdout
