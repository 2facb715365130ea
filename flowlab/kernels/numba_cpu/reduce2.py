"""Numba CPU kernels of ops/reduce_ops2.py (see kernels/reference/reduce2.py) over reduce.py's (kept, reduced)
2-D views: one row loop, the reduction picked by a small integer."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit
from .reduce import _two_d

KINDS = ("reduce_min", "reduce_prod", "reduce_all", "reduce_any")
MIN, PROD, ALL, ANY = range(4)


@njit
def _rows(k, x, out, one):
    for r in range(x.shape[0]):
        if k == MIN:  # a NaN wins wherever it is, as np.min
            m = x[r, 0]
            for c in range(1, x.shape[1]):
                v = x[r, c]
                if v < m or v != v:
                    m = v
            out[r] = m
        elif k == PROD:
            p = one
            for c in range(x.shape[1]):
                p *= x[r, c]
            out[r] = p
        else:
            hit = k == ANY  # the answer once an element decides it: any nonzero for ANY, any zero for ALL
            found = False
            for c in range(x.shape[1]):
                if (x[r, c] != 0) == hit:
                    found = True
                    break
            out[r] = 1 if found == hit else 0


def _factory(k: int):
    def factory(ctx: KernelCtx) -> KernelFn:
        two_d = _two_d(ctx)
        dtype = ctx.in_descs[0].dtype.np
        one = np.float64(1) if dtype.kind == "f" else np.int64(1)  # float64 products; integers wrap on the store

        def kernel(ins, outs):
            _rows(k, two_d(ins[0]), outs[0].reshape(-1), one)

        return kernel

    return factory


for _k, _name in enumerate(KINDS):
    register_kernel(_name, "numba")(_factory(_k))


@njit
def _not_finite(x):
    x = x.ravel()
    n = 0
    for i in range(x.size):
        v = x[i]
        if v != v or v - v != 0:  # NaN, or ±inf (inf - inf is NaN)
            n += 1
    return n


def _count(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        total = 0
        for x in ins:
            total += _not_finite(x)
        outs[0][0] = total

    return kernel


register_kernel("count_not_finite", "numba")(_count)
register_kernel("multi_count_not_finite", "numba")(_count)
