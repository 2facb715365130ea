"""BLAS GEMM callable from inside a Numba kernel, on offsets into flat buffers, with transposes, leading dimensions
and beta (accumulate into C) chosen per call.

``np.dot`` in Numba takes whole arrays and always writes C (beta 0); a kernel that loops over a batch needs a GEMM
on a sample's slice that adds into an accumulator (a filter gradient over the batch) without a temporary. This
calls the symbol Numba's own ``np.dot`` calls, ``numba_xxgemm`` (Numba's helper over scipy's cython BLAS), so a
kernel using it is cached on disk as any other: the symbol is looked up by name when the code is loaded, not baked
in as an address. ``ensure_blas`` (which imports scipy's BLAS and registers that symbol) must run before a kernel
using it is compiled or loaded: ``blas_ready()`` does, once, from each kernel factory that needs it.
"""

from __future__ import annotations

import numpy as np
from numba import types

from ._numba import njit

_XXGEMM = types.ExternalFunction("numba_xxgemm", types.intc(
    types.char, types.char, types.char,  # kind ('s' float32, 'd' float64), transa, transb (column-major)
    types.intp, types.intp, types.intp,  # m, n, k
    types.voidptr, types.voidptr, types.intp,  # alpha, a, lda
    types.voidptr, types.intp, types.voidptr,  # b, ldb, beta
    types.voidptr, types.intp))  # c, ldc

_ready = False


def blas_ready() -> None:
    """Register numba_xxgemm with the JIT (imports scipy.linalg.cython_blas); idempotent."""
    global _ready
    if not _ready:
        from numba.np.linalg import ensure_blas

        ensure_blas()
        _ready = True


@njit
def gemm(ta, tb, m, n, k, a, a0, lda, b, b0, ldb, beta, c, c0, ldc):
    """Row-major ``C[m, n] = op(A) @ op(B) + beta * C`` where A, B, C start at offsets a0, b0, c0 of the flat
    arrays a, b, c (one dtype, float32 or float64), with row strides lda, ldb, ldc; op transposes when ta / tb.

    A row-major matrix is its column-major transpose, so this is BLAS's ``C^T = op(B)^T op(A)^T``."""
    if m == 0 or n == 0:
        return
    one = np.ones(1, c.dtype)
    bet = np.full(1, beta, c.dtype)
    kind = ord("s") if c.itemsize == 4 else ord("d")
    status = _XXGEMM(kind, ord("t") if tb else ord("n"), ord("t") if ta else ord("n"), n, m, k,
                     one.ctypes, b[b0:].ctypes, ldb, a[a0:].ctypes, lda, bet.ctypes, c[c0:].ctypes, ldc)
    if status != 0:
        raise RuntimeError("BLAS gemm failed (numba_xxgemm returned an error)")
