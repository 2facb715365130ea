"""unique_with_counts' Numba CPU kernel (see kernels/reference/unique.py): a stable sort groups equal values; each
group is numbered by its first element's position, which is the order of first appearance."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _unique(x, y, idx, count, num):
    n = x.size
    order = np.argsort(x, kind="mergesort")  # stable: a group's first entry is its first appearance
    group = np.empty(n, np.int64)  # group number of each x (by sorted value)
    firsts = np.empty(n, np.int64)  # each group's first position in x
    g = -1
    for j in range(n):
        i = order[j]
        if j == 0 or x[i] != x[order[j - 1]]:  # NaN != NaN: each NaN its own value, as np.unique in NumPy < 2 does
            g += 1
            firsts[g] = i
        group[i] = g
    k = g + 1
    by_first = np.argsort(firsts[:k], kind="mergesort")
    rank = np.empty(k, np.int64)
    for r in range(k):
        rank[by_first[r]] = r
    for i in range(n):
        y[i] = 0
        count[i] = 0
    for i in range(n):
        r = rank[group[i]]
        idx[i] = r
        count[r] += 1
        if firsts[group[i]] == i:
            y[r] = x[i]
    num[0] = k


@register_kernel("unique_with_counts", "numba")
def _unique_f(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        _unique(ins[0], *outs)

    return kernel
