"""Shared helpers for the benchmarks: medians of repeated rounds and a plain table printer."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread: stable numbers on a shared 2-core box
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
