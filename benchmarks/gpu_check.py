"""Every GPU check issue 12 asks for, in one command, with one report: ``make gpu-check`` or
``python benchmarks/gpu_check.py [--out DIR]`` on a machine with an NVIDIA GPU. On a machine lent for 10 minutes a
command, with no network (its python3 has numba-cuda and torch): ``python3 benchmarks/gpu_check.py --out DIR
--budget 540``, then ``--steps`` naming whatever the report lists as NOT RUN.

Steps (``--steps`` picks some, in this order; each has its own time limit, and the report is rewritten after each,
so a run cut short still leaves what it did):

* ``probe``: the device, driver, numba / numba-cuda / torch versions; stops here, exit 2, if there is no GPU.
* ``tests``: ``NUMBA_ENABLE_CUDASIM=0 pytest tests/cuda`` (the same tests CI runs in the simulator, on the GPU);
  a test that skips is listed, since on a GPU nothing should.
* ``gemm``: benchmarks/gpu_gemm.py, the tiled GEMM at 4096^2 in TFLOP/s beside torch's cuBLAS.
* ``mlp``: benchmarks/gpu_mlp.py, an MLP SGD step through the full runtime against torch eager CUDA, with the
  issue's targets (784-512-10 batch 100 <= 1.0x, 64-32-10 batch 8 <= 0.3x) marked met or missed.
* ``memcheck``: compute-sanitizer's memcheck over the kernel tests (every CUDA kernel, bounds guards included);
  ``racecheck`` and ``synccheck``: over the float32 kernel tests (the shared-memory kernels' barriers).

Exit status: 0 every check passed (a missed speed target is reported, not an error), 1 a check failed, 2 no GPU.
``--sim`` runs the same steps in Numba's CUDA simulator at tiny shapes (the benchmarks' ``--quick`` mode; no
sanitizer, which needs a GPU), so CI can prove that this script and the benchmarks are not rotten; ``--quick``
runs the benchmarks' quick mode on a GPU too (1024^2 GEMM, fewer rounds). ``-k EXPR`` narrows the tests step.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("probe", "tests", "gemm", "mlp", "memcheck", "racecheck", "synccheck")
MLP_TARGETS = {"MLP 784-512-10, batch 100": 1.0, "MLP 64-32-10, batch 8": 0.3}
KERNEL_TESTS = ["tests/cuda/test_kernels.py", "tests/cuda/test_edges.py", "tests/cuda/test_nan_inf.py"]

PROBE = r"""
import json, sys
out = {}
try:
    import numba
    out["numba"] = numba.__version__
    from flowlab.kernels import cuda_available
    from numba import cuda
    out["numba.cuda"] = getattr(cuda, "implementation", "?")
    try:
        from importlib.metadata import version
        out["numba-cuda"] = version("numba-cuda")
    except Exception:
        out["numba-cuda"] = "not installed (the built-in numba.cuda)"
    out["available"] = bool(cuda_available())
    out["simulator"] = bool(numba.config.ENABLE_CUDASIM)
    if out["available"] and not out["simulator"]:
        dev = cuda.get_current_device()
        name = dev.name
        out["device"] = name.decode() if isinstance(name, bytes) else str(name)
        out["compute capability"] = ".".join(map(str, dev.compute_capability))
        out["driver"] = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))
except Exception as err:
    out["error"] = f"{type(err).__name__}: {err}"
try:
    import torch
    out["torch"] = f"{torch.__version__} (CUDA {'available' if torch.cuda.is_available() else 'not available'})"
except ImportError:
    out["torch"] = "not installed"
print(json.dumps(out))
"""


class Check:
    """What the steps found, written out as one Markdown report after each step."""

    def __init__(self, out: Path, sim: bool) -> None:
        self.out, self.sim = out, sim
        self.sections: list[tuple[str, str, list[str]]] = []  # (step, status, lines)
        self.failed = False

    def add(self, step: str, status: str, lines: list[str], block: list[str] | None = None) -> None:
        """``lines``: what the step found (the first is printed as its summary); ``block``: output quoted as is."""
        self.failed |= status == "FAIL"
        self.sections.append((step, status, lines + (["", "```", *block, "```"] if block else [])))
        print(f"[gpu-check] {step}: {status}" + (f" ({lines[0]})" if lines else ""), flush=True)
        self.write()

    def write(self) -> None:
        mode = ("Numba's CUDA simulator (--sim: tiny shapes, timings meaningless)" if self.sim
                else "the GPU (NUMBA_ENABLE_CUDASIM=0)")
        text = [f"# flowlab GPU check ({time.strftime('%Y-%m-%d %H:%M:%S %Z')})", "",
                f"Run on {mode}, from {ROOT}. Logs beside this report.", "", "| step | result |", "|---|---|"]
        text += [f"| {step} | {status} |" for step, status, _ in self.sections] + [""]
        for step, status, lines in self.sections:
            text += [f"## {step}: {status}", "", *lines, ""]
        (self.out / "report.md").write_text("\n".join(text))


def run_logged(cmd: list[str], log: Path, env: dict[str, str], timeout: float,
               label: str = "") -> tuple[int | None, str]:
    """Run ``cmd`` from the repository root, its output into ``log`` (appended); -> (exit status or None on
    timeout, output)."""
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        code, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as err:
        code = None
        output = "".join(x.decode() if isinstance(x, bytes) else (x or "") for x in (err.stdout, err.stderr))
        output += f"\n[gpu-check] stopped after {timeout:.0f} s\n"
    with log.open("a") as f:
        f.write(f"$ {label or ' '.join(cmd)}   # {time.monotonic() - start:.1f} s, exit {code}\n{output}\n")
    return code, output


def find_sanitizer() -> str | None:
    """compute-sanitizer from PATH, $CUDA_HOME/bin or /usr/local/cuda/bin (where the CUDA toolkit puts it)."""
    found = shutil.which("compute-sanitizer")
    candidates = [Path(os.environ.get("CUDA_HOME", "/nonexistent")) / "bin", Path("/usr/local/cuda/bin"),
                  *sorted(Path("/usr/local").glob("cuda-*/bin"))]
    for folder in candidates:
        if not found and (folder / "compute-sanitizer").is_file():
            found = str(folder / "compute-sanitizer")
    return found


def xdist(args: argparse.Namespace) -> list[str]:
    """pytest-xdist's workers where it is installed: the tests compile each kernel on first use (CPU-bound, no
    cache for closures), which several processes share out; the GPU takes their contexts side by side."""
    if args.jobs > 1 and importlib.util.find_spec("xdist") is not None:
        return ["-n", str(args.jobs)]
    return []


def step_timeout(args: argparse.Namespace) -> float:
    """A step's limit: --timeout, or what is left of --budget (so a run inside a fixed window ends with a report)."""
    if args.budget is None:
        return args.timeout
    return max(1.0, min(args.timeout, args.budget - (time.monotonic() - args.started)))


def junit_summary(path: Path) -> tuple[dict[str, int], list[str], list[str]]:
    """-> (counts, failed test ids, 'test: skip reason' lines) from pytest's JUnit XML."""
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    failed, skipped = [], []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        if "skipped" in kinds:
            counts["skipped"] += 1
            skipped.append(f"{name}: {case.find('skipped').get('message', '')}")
        elif kinds:
            counts["failed" if "failure" in kinds else "error"] += 1
            failed.append(name)
        else:
            counts["passed"] += 1
    return counts, failed, skipped


def step_tests(check: Check, env: dict[str, str], args: argparse.Namespace) -> None:
    xml = check.out / ".tests.xml"
    cmd = [sys.executable, "-m", "pytest", "tests/cuda", "-v", "-rfEs", "-p", "no:cacheprovider",
           f"--junitxml={xml}", "-o", "addopts=", "-m", "not long"]
    if args.k:
        cmd += ["-k", args.k]
    code, output = run_logged(cmd + xdist(args), check.out / "tests.log", env, step_timeout(args))
    if code is None or not xml.exists():
        check.add("tests", "FAIL", [f"pytest did not finish (exit {code}); see tests.log"], output.splitlines()[-5:])
        return
    counts, failed, skipped = junit_summary(xml)
    xml.unlink()
    lines = [", ".join(f"{v} {k}" for k, v in counts.items()), *(f"- FAILED {t}" for t in failed)]
    lines += [f"- skipped {s}" for s in skipped]
    bad = failed or code not in (0, 5) or (not args.k and counts["passed"] == 0)
    check.add("tests", "FAIL" if bad else "PASS", lines)


def step_bench(check: Check, env: dict[str, str], args: argparse.Namespace, name: str) -> None:
    script = ROOT / "benchmarks" / f"gpu_{name}.py"
    cmd = [sys.executable, str(script)] + (["--quick"] if args.quick or args.sim else [])
    code, output = run_logged(cmd, check.out / f"{name}.log", env, step_timeout(args))
    rows = [line for line in output.splitlines() if line.strip() and not line.startswith("-")]
    if code != 0:
        check.add(name, "FAIL", [f"exit {code}; see {name}.log"], rows[-8:])
        return
    if "no GPU: skipped" in output:
        check.add(name, "FAIL", ["the benchmark found no GPU"], rows)
        return
    lines = mlp_verdicts(output) if name == "mlp" else []
    check.add(name, "PASS", lines or [f"{len(rows)} rows"], rows)


def mlp_verdicts(output: str) -> list[str]:
    """Each MLP target of the issue, met or missed, from gpu_mlp.py's ratio rows."""
    lines = []
    for label, target in MLP_TARGETS.items():
        got = re.search(re.escape(label) + r": ratio flowlab / torch \(target <= [\d.]+x\)\s+([\d.]+)x", output)
        verdict = ("met" if float(got.group(1)) <= target else "MISSED") if got else "not measured (no torch)"
        ratio = f" ({got.group(1)}x)" if got else ""
        lines.append(f"target {label}: flowlab / torch <= {target}x: {verdict}{ratio}")
    return lines


def step_sanitizer(check: Check, env: dict[str, str], args: argparse.Namespace, tool: str) -> None:
    if args.sim:
        check.add(tool, "NOT RUN", ["compute-sanitizer needs a GPU (the simulator runs kernels as Python)"])
        return
    sanitizer = find_sanitizer()
    if sanitizer is None:
        check.add(tool, "NOT RUN", ["compute-sanitizer not found on PATH, in $CUDA_HOME/bin or /usr/local/cuda*/bin"])
        return
    tests = KERNEL_TESTS if tool == "memcheck" else KERNEL_TESTS[:1]
    select = args.k or ("not ptx" if tool == "memcheck" else "float32 and not ptx")
    cmd = [sanitizer, "--tool", tool, "--error-exitcode", "86", "--target-processes", "all",
           sys.executable, "-m", "pytest", *tests, "-q", "-x", "-p", "no:cacheprovider", "-o", "addopts=",
           "-k", select, *xdist(args)]
    code, output = run_logged(cmd, check.out / "sanitizer.log", env, step_timeout(args))
    summaries = re.findall(r"ERROR SUMMARY: (\d+) error", output)
    errors = sum(int(n) for n in summaries)
    tail = [line for line in output.splitlines() if "passed" in line or "failed" in line][-1:]
    if code is None:
        check.add(tool, "FAIL", ["stopped at its time limit; see sanitizer.log"])
    elif code == 86 or errors:
        check.add(tool, "FAIL", [f"{errors} error(s) reported; see sanitizer.log", *tail])
    elif code != 0 or not summaries:
        check.add(tool, "FAIL", [f"exit {code} (the tests under {tool}); see sanitizer.log", *tail])
    else:
        check.add(tool, "PASS", [f"0 errors over {' '.join(tests)} -k {select!r}", *tail])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "gpu-check", help="report folder")
    parser.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, of {', '.join(STEPS)}")
    parser.add_argument("--sim", action="store_true", help="in Numba's CUDA simulator, tiny shapes")
    parser.add_argument("--quick", action="store_true", help="the benchmarks' quick mode")
    parser.add_argument("-k", default="", help="pytest -k expression for the tests and sanitizer steps")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per step")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds for the whole run: steps past it are reported NOT RUN (e.g. 540 in a "
                             "10-minute window)")
    parser.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1),
                        help="pytest-xdist workers for the tests and sanitizer steps, where xdist is installed")
    args = parser.parse_args(argv)
    args.started = time.monotonic()
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        parser.error(f"unknown step(s) {unknown}; the steps are {', '.join(STEPS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for old in ("report.md", "tests.log", "gemm.log", "mlp.log", "sanitizer.log"):
        (args.out / old).unlink(missing_ok=True)
    # an explicit 0 (not unset): tests/conftest.py defaults the simulator on, and Numba reads the flag at import
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1" if args.sim else "0", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    check = Check(args.out, args.sim)
    code, output = run_logged([sys.executable, "-c", PROBE], args.out / "tests.log", env, 300, "(the probe)")
    try:
        probe = json.loads(output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        probe = {"error": output.strip()[-2000:]}
    lines = [f"- {key}: {value}" for key, value in probe.items()]
    if "numba" not in probe:  # not a statement about the GPU: this Python cannot run flowlab's kernels at all
        check.add("probe", "FAIL", [f"{sys.executable} cannot import numba: {probe.get('error', '?')}", *lines])
        print(f"\ncannot check the GPU: {sys.executable} cannot import numba ({probe.get('error', '?')}). Install "
              f"the project with its cuda extra (make gpu-check uses .venv where it exists; GPU_PY=... picks "
              f"another Python). Report: {args.out / 'report.md'}")
        return 1
    if not probe.get("available"):
        reason = probe.get("error") or "numba.cuda.is_available() is False (no NVIDIA driver or device)"
        check.add("probe", "NO GPU", [f"no GPU present: {reason}", *lines])
        print(f"\nno GPU present: {reason}.\nThe GPU checks need an NVIDIA GPU and driver (numba-cuda's toolkit "
              f"wheels: pip install -e '.[cuda]'); `{Path(sys.argv[0]).name} --sim` runs them in Numba's CUDA "
              f"simulator at tiny shapes instead. Report: {args.out / 'report.md'}")
        return 2
    check.add("probe", "PASS", lines)
    for step in steps:
        if args.budget is not None and time.monotonic() - args.started > args.budget - 10:
            if step != "probe":
                check.add(step, "NOT RUN", [f"out of the --budget of {args.budget:.0f} s"])
            continue
        if step == "tests":
            step_tests(check, env, args)
        elif step in ("gemm", "mlp"):
            step_bench(check, env, args, step)
        elif step in ("memcheck", "racecheck", "synccheck"):
            step_sanitizer(check, env, args, step)
    print(f"\nreport: {args.out / 'report.md'}")
    print((args.out / "report.md").read_text().split("\n## ")[0])
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
