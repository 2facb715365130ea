"""The Numba matmul's 2-D products go through the kernels' shared GEMM (kernels/numba_cpu/blas.py), not Numba's
np.dot (which calls SciPy's BLAS; blas.py can call NumPy's own, faster here): every operand layout the kernel is
given (a register or its transpose), the same bits in the protocol's kernel and a fused segment's call."""

from __future__ import annotations

import numpy as np
import pytest

from flowlab.kernels.numba_cpu import nn
from tests.helpers.matmul import matmul_kernel

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n, ta, tb", [(100, 784, 512, False, True), (512, 100, 784, True, False),
                                             (100, 10, 512, False, False), (100, 512, 10, False, True),
                                             (33, 17, 9, True, True), (1, 5, 1, False, False)])
def test_two_d_products_use_the_shared_gemm(m, k, n, ta, tb, dtype, monkeypatch):
    monkeypatch.setattr(nn, "nt_micro_faster", lambda *shape: False)  # x W^T on the micro-kernel: test_gemm_nt.py
    a = RNG.uniform(-2, 2, (k, m) if ta else (m, k)).astype(dtype)
    b = RNG.uniform(-2, 2, (n, k) if tb else (k, n)).astype(dtype)
    kernel, out = matmul_kernel(a, b, ta, tb)
    call = kernel.fused([a, b], [out])
    assert call.fn is nn._dot_gemm
    kernel([a, b], [out])
    np.testing.assert_allclose(out, (a.T if ta else a).astype(np.float64) @ (b.T if tb else b),
                               rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-4 if dtype == np.float32 else 1e-12)
    fused = np.full_like(out, 7)
    call = kernel.fused([a, b], [fused])
    call.fn(*call.args)
    assert fused.tobytes() == out.tobytes()


def test_empty_sums_give_zeros():
    out = np.full((7, 3), 7, np.float32)
    nn._dot_gemm(np.ones((7, 0), np.float32), np.ones((0, 3), np.float32), out)
    np.testing.assert_array_equal(out, np.zeros((7, 3), np.float32))


def test_a_strided_view_is_refused_never_copied():
    """Only registers and their transposes reach the kernel. A strided view is a typing error: the buffers are
    taken by reshape, which cannot copy (ravel would, and the product would land in the copy): a compile error."""
    from numba.core.errors import TypingError

    a, b = RNG.uniform(-1, 1, (6, 4)).astype(np.float32), RNG.uniform(-1, 1, (4, 8)).astype(np.float32)
    base = np.zeros((6, 16), np.float32)
    with pytest.raises((TypingError, AssertionError)):  # the latter: Numba's np.dot, in the same function
        nn._dot_gemm(a, b, base[:, ::2])
