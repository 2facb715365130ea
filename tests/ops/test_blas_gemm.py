"""kernels/numba_cpu/blas.py's gemm: row-major C = op(A) @ op(B) + beta * C on offsets into flat buffers, against
NumPy, for every transpose pair, leading dimensions wider than the matrices, beta 0 and 1, float32 and float64."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from flowlab.kernels.numba_cpu.blas import blas_ready, gemm


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_gemm_on_offsets_equals_numpy(dtype, ta, tb, beta):
    blas_ready()
    rng = np.random.default_rng(3)
    m, n, k, pad = 5, 7, 4, 3
    a_rows, a_cols = (k, m) if ta else (m, k)
    b_rows, b_cols = (n, k) if tb else (k, n)
    lda, ldb, ldc = a_cols + pad, b_cols + pad, n + pad  # rows wider than the matrices: strided views
    a = rng.standard_normal(2 + a_rows * lda).astype(dtype)
    b = rng.standard_normal(5 + b_rows * ldb).astype(dtype)
    c = rng.standard_normal(1 + m * ldc).astype(dtype)
    a_mat = a[2:].reshape(a_rows, lda)[:, :a_cols]
    b_mat = b[5:].reshape(b_rows, ldb)[:, :b_cols]
    before = c.copy()
    want = (a_mat.T if ta else a_mat) @ (b_mat.T if tb else b_mat) + beta * before[1:].reshape(m, ldc)[:, :n]
    gemm(ta, tb, m, n, k, a, 2, lda, b, 5, ldb, beta, c, 1, ldc)
    got = c[1:].reshape(m, ldc)
    np.testing.assert_allclose(got[:, :n], want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_array_equal(got[:, n:], before[1:].reshape(m, ldc)[:, n:])  # the padding is not touched
    assert c[0] == before[0]


def test_gemm_with_empty_dimension_writes_nothing():
    blas_ready()
    c = np.ones(6, np.float32)
    gemm(False, False, 0, 3, 2, np.ones(6, np.float32), 0, 2, np.ones(6, np.float32), 0, 3, 0.0, c, 0, 3)
    np.testing.assert_array_equal(c, 1)


def test_gemm_calls_numpys_openblas_when_numpy_bundles_one():
    """The kernels' GEMM is numpy's own OpenBLAS where numpy ships one (1.2-1.6x scipy's on LeNet's conv
    shapes here), else scipy's through the shim: blas_source() says which."""
    from flowlab.kernels.numba_cpu.blas import blas_source, numpy_cblas

    blas_ready()
    found = numpy_cblas()
    if os.environ.get("FLOWLAB_BLAS") == "scipy" or found is None:
        assert blas_source() == "scipy (numba_xxgemm)"
    else:
        assert blas_source() == found[2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_scipy_shim_equals_numpy(dtype, ta, tb):
    """The fallback (no OpenBLAS in numpy): the C-callable row-major CBLAS shim over numba_xxgemm, called
    through ctypes, with leading dimensions wider than the matrices and beta 0.5."""
    from numba.np.linalg import ensure_blas

    from flowlab.kernels.numba_cpu.blas import _NO_TRANS, _ROW_MAJOR, _TRANS, _shims

    ensure_blas()
    shim = _shims()[0 if dtype == np.float32 else 1]
    rng = np.random.default_rng(4)
    m, n, k, pad = 6, 5, 3, 2
    a = rng.standard_normal((k, m + pad) if ta else (m, k + pad)).astype(dtype)
    b = rng.standard_normal((n, k + pad) if tb else (k, n + pad)).astype(dtype)
    c = rng.standard_normal((m, n + pad)).astype(dtype)
    a_mat = a[:, :m] if ta else a[:, :k]
    b_mat = b[:, :k] if tb else b[:, :n]
    want = c.copy()
    want[:, :n] = 2.0 * ((a_mat.T if ta else a_mat) @ (b_mat.T if tb else b_mat)) + 0.5 * c[:, :n]
    shim.ctypes(_ROW_MAJOR, _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS, m, n, k, 2.0,
                a.ctypes.data, a.shape[1], b.ctypes.data, b.shape[1], 0.5, c.ctypes.data, c.shape[1])
    np.testing.assert_allclose(c, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
