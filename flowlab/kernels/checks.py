"""Bounds checks of the kernels that index with data (gather, its gradient, sparse labels).

Indices are call-time data, so no inference rule can check them. A kernel checks every index before it writes
anything (the failed act changes nothing) and raises an IndexError naming the bad value, where it was, and the
valid range; the runtime wraps it into a KernelError naming the op, the job and the user's line. The Numba
kernels find the first bad index in compiled code (``first_out_of_range`` in numba_cpu) and call
``raise_out_of_range`` with it, so both implementations raise the same message.
"""

from __future__ import annotations

import numpy as np


def first_out_of_range(ids: np.ndarray, n: int) -> int:
    """The flat position of the first index outside [0, n), or -1."""
    bad = np.flatnonzero((ids < 0) | (ids >= n))
    return int(bad[0]) if bad.size else -1


def raise_out_of_range(ids: np.ndarray, bad: int, n: int, what: str, axis: int, target: str,
                       target_shape: tuple[int, ...]) -> None:
    """Raise for ``ids.flat[bad]`` (``what``: "index", "segment id") when ``bad >= 0``."""
    if bad < 0:
        return
    value = int(ids.reshape(-1)[bad])
    at = f" (at flat position {bad} of shape {tuple(ids.shape)})" if ids.size > 1 else ""
    raise IndexError(f"{what} {value}{at} is out of range [0, {n}) along axis {axis} of {target!r} "
                     f"(shape {tuple(target_shape)})")


def check_indices(ids: np.ndarray, n: int, what: str, axis: int, target: str, target_shape: tuple[int, ...]) -> None:
    raise_out_of_range(ids, first_out_of_range(ids, n), n, what, axis, target, target_shape)


def check_labels(labels: np.ndarray, depth: int, bad: int | None = None) -> None:
    """Sparse labels are class indices in [0, depth); ``bad`` is a Numba scan's result (None: scan here)."""
    flat = labels.reshape(-1)
    bad = first_out_of_range(flat, depth) if bad is None else bad
    if bad >= 0:
        raise IndexError(f"label {int(flat[bad])} (at flat index {bad}) is out of range for {depth} classes; "
                         f"labels must be in [0, {depth})")
