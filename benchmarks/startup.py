"""A fresh process: `import flowlab` + the first pad_Job call, with a warm and a cold Numba cache.
Targets: warm <= 1.5 s, cold <= 6 s. Medians of fresh processes, baselines beside them."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from _util import QUICK, table

PROGRAM = """
import numpy as np, flowlab as flow, flowlab.typing as tp
@flow.global_function()
def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
    return flow.reflection_pad2d(x, padding=1)
pad_Job(np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32))
"""


def wall(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def median_wall(code: str, runs: int, env: dict[str, str], fresh_cache: bool = False) -> float:
    times = []
    for _ in range(runs):
        run_env = dict(env)
        if fresh_cache:
            run_env["FLOWLAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="flowlab-cold-")
            run_env.pop("NUMBA_CACHE_DIR", None)
        times.append(wall(code, run_env))
    return statistics.median(times)


def main() -> None:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env["FLOWLAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="flowlab-warm-")
    env.pop("NUMBA_CACHE_DIR", None)
    wall(PROGRAM, env)  # fill the warm cache
    n = 2 if QUICK else 5
    python = median_wall("pass", n, env)
    numba = median_wall("import numba", n, env)
    importing = median_wall("import flowlab", n, env)
    warm = median_wall(PROGRAM, n, env)
    cold = median_wall(PROGRAM, 1 if QUICK else 3, env, fresh_cache=True)
    table("fresh-process start (median wall time)", [
        ("python -c pass", f"{python:.2f} s"),
        ("python -c 'import numba'", f"{numba:.2f} s"),
        ("import flowlab", f"{importing:.2f} s"),
        ("import + first pad_Job, warm cache", f"{warm:.2f} s  (target <= 1.5 s: ratio {warm / 1.5:.2f}x)"),
        ("import + first pad_Job, cold cache", f"{cold:.2f} s  (target <= 6 s: ratio {cold / 6:.2f}x)"),
    ])


if __name__ == "__main__":
    main()
