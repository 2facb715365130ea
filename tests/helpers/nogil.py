"""Two threads meeting inside kernels: the proof that kernels run at once."""

from __future__ import annotations

import numpy as np

from flowlab.kernels.numba_cpu._numba import njit

SPIN_LIMIT = 3_000_000_000  # iterations: seconds of spinning, far beyond a thread's start even on a loaded machine


@njit(cache=False)
def _meet(flags: np.ndarray, me: int, other: int, limit: int) -> bool:
    flags[me] = 1
    i = 0
    while flags[other] == 0 and i < limit:
        flags[2 + me] += 1  # a store the load of flags[other] may alias: it is read again every iteration
        i += 1
    return flags[other] != 0
