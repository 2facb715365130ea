"""NumPy's own BLAS, callable from Numba kernels.

Numba's ``np.dot`` calls SciPy's BLAS (through ``scipy.linalg.cython_blas``). Where NumPy and SciPy come from
PyPI wheels, each bundles its own OpenBLAS build, and they need not be the same: here NumPy 2.4's OpenBLAS 0.3.31
runs the MLP's two 100x784x512 GEMMs 13-15 % faster than SciPy 1.17's 0.3.30 (both one thread, same arrays,
interleaved rounds; issue 13). So the dense kernels call NumPy's ``cblas_?gemm`` when it can be found.

The library is the one NumPy already loaded (its wheel's ``numpy.libs`` / ``.dylibs`` folder, the
``scipy-openblas64`` build: 64-bit integers, symbols prefixed ``scipy_`` and suffixed ``64_``). Its two functions
are registered with LLVM under flowlab's own names (``flowlab_cblas_sgemm``/``dgemm``), so a cached kernel
refers to a name, resolved when the kernel is loaded, never to an address. ``ready()`` says whether the names
are registered; without such a library (a NumPy built against MKL or a system BLAS) it is False and the kernels
keep Numba's ``np.dot``. ``FLOWLAB_NUMPY_BLAS=0`` turns it off (to compare both).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from numba import types

_SIG = (types.intc, types.intc, types.intc,  # order, transa, transb (CBLAS enums)
        types.int64, types.int64, types.int64)  # m, n, k (blasint: 64-bit in the scipy-openblas64 build)
SGEMM = types.ExternalFunction("flowlab_cblas_sgemm", types.void(
    *_SIG, types.float32, types.voidptr, types.int64, types.voidptr, types.int64, types.float32, types.voidptr,
    types.int64))
DGEMM = types.ExternalFunction("flowlab_cblas_dgemm", types.void(
    *_SIG, types.float64, types.voidptr, types.int64, types.voidptr, types.int64, types.float64, types.voidptr,
    types.int64))
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112  # CBLAS's enum values

_SYMBOLS = {"flowlab_cblas_sgemm": "scipy_cblas_sgemm64_", "flowlab_cblas_dgemm": "scipy_cblas_dgemm64_"}
_state: bool | None = None


def _numpy_openblas() -> ctypes.CDLL | None:
    """NumPy's bundled OpenBLAS (already loaded by NumPy: opening it again only finds it), if it has the symbols."""
    import numpy

    root = Path(numpy.__file__).parent
    for folder in (root.parent / "numpy.libs", root / ".dylibs"):
        for path in sorted(folder.glob("*openblas64*")) if folder.is_dir() else ():
            try:
                lib = ctypes.CDLL(str(path))
                for symbol in _SYMBOLS.values():
                    getattr(lib, symbol)
            except (OSError, AttributeError):
                continue
            return lib
    return None


def ready() -> bool:
    """Register NumPy's cblas_sgemm / dgemm with LLVM once; whether kernels may call SGEMM / DGEMM."""
    global _state
    if _state is None:
        lib = None if os.environ.get("FLOWLAB_NUMPY_BLAS", "1") in ("0", "false", "off") else _numpy_openblas()
        if lib is not None:
            from llvmlite import binding

            for name, symbol in _SYMBOLS.items():
                binding.add_symbol(name, ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value)
        _state = lib is not None
    return _state
