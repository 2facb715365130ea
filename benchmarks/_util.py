"""Shared helpers for the benchmarks: medians of repeated rounds and a plain table printer."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable

_ENV_BEFORE = frozenset(os.environ)  # what the caller set, before this module sets its defaults
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread: stable numbers on a shared 2-core box


def _pin_loaded_blas() -> None:
    """OpenBLAS reads OPENBLAS_NUM_THREADS once, when it loads. The benchmarks import NumPy (and its OpenBLAS) before
    this module, so the line above reaches only the BLAS libraries loaded later (SciPy's, which Numba calls); NumPy's
    keeps one thread per core. threadpoolctl sets the libraries already loaded to the same count (a direct run of a
    benchmark then times what `make bench` times)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # scikit-learn (the test extra) and the bench extra bring it; without it, say so
        if "numpy" in sys.modules and "OPENBLAS_NUM_THREADS" not in _ENV_BEFORE:
            print("note: threadpoolctl missing; NumPy's BLAS was loaded before OPENBLAS_NUM_THREADS=1 was set",
                  file=sys.stderr)
        return
    threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]), user_api="blas")


_pin_loaded_blas()
# Numba's kernels from the first act (no tiered start, kernels/tiered.py): a timed step never runs a reference kernel
# whose Numba twin is still compiling. benchmarks/startup.py sets the mode of each fresh process itself.
os.environ.setdefault("FLOWLAB_KERNELS", "numba")

QUICK = "--quick" in sys.argv
# --cpu: time each round by the calling thread's CPU time, not the wall clock. On a shared, loaded box a thread
# waiting for a core makes wall-clock rounds 2x slower at random; its CPU time does not grow. Valid only where
# all the timed work runs on the calling thread (one BLAS/torch thread; the benchmarks that take --cpu check).
CPU = "--cpu" in sys.argv
clock = time.thread_time if CPU else time.perf_counter


def median_time(fn: Callable[[], object], repeat: int, number: int = 1) -> float:
    """Median over ``repeat`` rounds of the mean time of ``number`` calls, in seconds (``clock``)."""
    rounds = []
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            fn()
        rounds.append((clock() - start) / number)
    return statistics.median(rounds)


def table(title: str, rows: list[tuple[str, str]]) -> None:
    width = max(len(label) for label, _ in rows)
    print(f"\n{title}")
    print("-" * len(title))
    for label, value in rows:
        print(f"{label:<{width}}  {value}")


def python_calls(fn: Callable[[], object]) -> tuple[int, int]:
    """The Python functions and the C functions one ``fn()`` calls, counted by ``sys.setprofile`` (the call's own
    frame left out): the Python a call costs, independent of the machine's load."""
    counts = {"call": 0, "c_call": 0}

    def count(frame: object, event: str, arg: object) -> None:
        if event in counts:
            counts[event] += 1

    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return counts["call"] - 1, counts["c_call"] - 1  # fn's own frame; sys.setprofile(None)


def cpu_description() -> str:
    """The CPU model, its core count and vector extensions (from /proc/cpuinfo where there is one): printed first by
    the benchmarks, so figures from different machines are never compared as if they were one."""
    import platform

    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                if model and flags:
                    break
    except OSError:
        pass
    vector = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")
              if f in flags]
    from _isa import describe  # under --isa, the restriction each library reports

    return f"{model}, {os.cpu_count()} logical cores, vector: {' '.join(vector) or 'unknown'}{describe()}"
