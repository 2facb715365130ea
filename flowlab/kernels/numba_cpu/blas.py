"""BLAS GEMM callable from inside a Numba kernel, on offsets into flat buffers, with transposes, leading dimensions
and beta (accumulate into C) chosen per call.

``np.dot`` in Numba takes whole arrays and always writes C (beta 0); a kernel that loops over a batch needs a GEMM
on a sample's slice that adds into an accumulator (a filter gradient over the batch) without a temporary.

Which BLAS: NumPy's own OpenBLAS when it exports an ILP64 ``cblas_sgemm`` / ``cblas_dgemm`` (the numpy wheels'
scipy-openblas64: ``scipy_cblas_sgemm64_``), else the one Numba's ``np.dot`` uses (scipy's, through Numba's
``numba_xxgemm``), reached through a small C-callable shim with the same signature. On this repo's AMD EPYC
(Zen 3, both libraries picking their Haswell kernels) numpy's OpenBLAS 0.3.31 ran LeNet's conv GEMMs 1.2-1.6x
faster than scipy's 0.3.30 (64x800x196: 72 vs 58 GFLOP/s; 32x1600x196: 64 vs 42; one thread, interleaved).

Either way a kernel calls the symbol ``flowlab_cblas_[sd]gemm64`` (row-major CBLAS with 64-bit integers), looked up
by name when the code is loaded, not baked in as an address, so a kernel using it is cached on disk as any other.
``blas_ready()`` registers the symbols (once) and must run before a kernel using ``gemm`` is compiled or loaded:
each kernel factory that needs it calls it.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numba import types

from ...flags import get
from ._numba import njit

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS enum values


def _cblas_sig(real: types.Type) -> types.Type:
    # cblas_?gemm(order, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), blasint = int64
    return types.void(types.intc, types.intc, types.intc, types.int64, types.int64, types.int64, real,
                      types.voidptr, types.int64, types.voidptr, types.int64, real, types.voidptr, types.int64)


_SGEMM = types.ExternalFunction("flowlab_cblas_sgemm64", _cblas_sig(types.float32))
_DGEMM = types.ExternalFunction("flowlab_cblas_dgemm64", _cblas_sig(types.float64))

_source: str | None = None  # which BLAS the symbols point at, once registered


def numpy_cblas() -> tuple[int, int, str] | None:
    """Addresses of the ILP64 ``cblas_sgemm`` and ``cblas_dgemm`` of the OpenBLAS bundled with numpy (its wheels
    ship it beside the package: numpy.libs on Linux and Windows, numpy/.dylibs on macOS), and the library's path;
    None when numpy has no such library (a numpy built against MKL, Accelerate or a system BLAS)."""
    package = Path(np.__file__).parent
    candidates = sorted([*package.parent.glob("numpy.libs/*openblas*"), *package.glob(".dylibs/*openblas*")])
    for path in candidates:
        try:
            lib = ctypes.CDLL(str(path))  # numpy has loaded it already: this is the same copy
        except OSError:
            continue
        for prefix in ("scipy_cblas_", "cblas_"):
            try:
                s, d = getattr(lib, f"{prefix}sgemm64_"), getattr(lib, f"{prefix}dgemm64_")
            except AttributeError:
                continue
            return ctypes.cast(s, ctypes.c_void_p).value, ctypes.cast(d, ctypes.c_void_p).value, str(path)
    return None


_XXGEMM = types.ExternalFunction("numba_xxgemm", types.intc(
    types.char, types.char, types.char,  # kind ('s' float32, 'd' float64), transa, transb (column-major)
    types.intp, types.intp, types.intp,  # m, n, k
    types.voidptr, types.voidptr, types.intp,  # alpha, a, lda
    types.voidptr, types.intp, types.voidptr,  # b, ldb, beta
    types.voidptr, types.intp))  # c, ldc


def _shims():
    """C-callable ``flowlab_cblas_[sd]gemm64`` over Numba's ``numba_xxgemm`` (scipy's BLAS), compiled only when
    numpy's own OpenBLAS is not found. A row-major C = op(A) op(B) is BLAS's column-major C^T = op(B)^T op(A)^T."""
    from numba import cfunc

    def make(real, kind):
        @cfunc(_cblas_sig(real), cache=True)
        def shim(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
            scalars = np.empty(2, real)
            scalars[0], scalars[1] = alpha, beta
            _XXGEMM(kind, ord("t") if tb == _TRANS else ord("n"), ord("t") if ta == _TRANS else ord("n"), n, m, k,
                    scalars[0:].ctypes, b, ldb, a, lda, scalars[1:].ctypes, c, ldc)

        return shim

    return make(types.float32, ord("s")), make(types.float64, ord("d"))


def blas_ready() -> None:
    """Register flowlab_cblas_[sd]gemm64 with the JIT; idempotent. ``FLOWLAB_BLAS=scipy`` forces the shim over
    scipy's BLAS (for comparison and tests)."""
    global _source
    if _source is not None:
        return
    import llvmlite.binding as llvm

    found = None if get("blas") == "scipy" else numpy_cblas()
    if found is not None:
        s, d, _source = found
    else:
        from numba.np.linalg import ensure_blas

        ensure_blas()  # registers numba_xxgemm, which the shims call
        shims = _shims()
        s, d = shims[0].address, shims[1].address
        _blas_keepalive.extend(shims)
        _source = "scipy (numba_xxgemm)"
    llvm.add_symbol("flowlab_cblas_sgemm64", s)
    llvm.add_symbol("flowlab_cblas_dgemm64", d)


_blas_keepalive: list[object] = []


def blas_source() -> str | None:
    """The BLAS the kernels' gemm calls (a library path, or scipy's through Numba), None before blas_ready()."""
    return _source


@functools.cache
def _thread_count() -> Callable[[], int] | None:
    if _source is None or not Path(_source).exists():
        return None
    lib = ctypes.CDLL(_source)
    for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads"):
        if hasattr(lib, name):
            return getattr(lib, name)
    return None


def blas_threads() -> int | None:
    """The threads the kernels' BLAS runs a call on now (OpenBLAS's own count, which threadpoolctl's limits set);
    None where that BLAS cannot say (scipy's, through Numba)."""
    count = _thread_count()
    return None if count is None else int(count())


@njit
def gemm(ta, tb, m, n, k, a, a0, lda, b, b0, ldb, beta, c, c0, ldc):
    """Row-major ``C[m, n] = op(A) @ op(B) + beta * C`` where A, B, C start at offsets a0, b0, c0 of the flat
    arrays a, b, c (one dtype, float32 or float64), with row strides lda, ldb, ldc; op transposes when ta / tb."""
    if m == 0 or n == 0:
        return
    trans_a, trans_b = _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS
    if c.itemsize == 4:
        _SGEMM(_ROW_MAJOR, trans_a, trans_b, m, n, k, np.float32(1.0), a[a0:].ctypes, lda, b[b0:].ctypes, ldb,
               np.float32(beta), c[c0:].ctypes, ldc)
    else:
        _DGEMM(_ROW_MAJOR, trans_a, trans_b, m, n, k, 1.0, a[a0:].ctypes, lda, b[b0:].ctypes, ldb, beta,
               c[c0:].ctypes, ldc)
