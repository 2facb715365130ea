"""Shared helpers for the benchmarks: medians of repeated rounds and a plain table printer."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread: stable numbers on a shared 2-core box

QUICK = "--quick" in sys.argv


def median_time(fn: Callable[[], object], repeat: int, number: int = 1) -> float:
    """Median over ``repeat`` rounds of the mean time of ``number`` calls, in seconds."""
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return statistics.median(rounds)


def table(title: str, rows: list[tuple[str, str]]) -> None:
    width = max(len(label) for label, _ in rows)
    print(f"\n{title}")
    print("-" * len(title))
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
