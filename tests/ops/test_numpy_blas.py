"""The Numba matmul calls NumPy's own BLAS (kernels/numba_cpu/npblas.py) where NumPy's wheel bundles one: the
same products as np.matmul, bit for bit (it is the same library and call), every operand layout the kernel is
given, and Numba's np.dot where the library is absent or FLOWLAB_NUMPY_BLAS=0."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from flowlab.kernels.numba_cpu import nn, npblas

from .test_small_matmul import matmul_kernel

RNG = np.random.default_rng(11)
NUMPY_BLAS = npblas.ready()
needs_numpy_blas = pytest.mark.skipif(not NUMPY_BLAS, reason="this NumPy bundles no scipy-openblas64")


def test_pypi_numpy_bundles_the_library() -> None:
    """The wheels this project installs (pyproject) bundle it: a NumPy without it is a different install."""
    import numpy

    if "scipy-openblas" not in str(numpy.show_config(mode="dicts")):
        pytest.skip("NumPy was not built with scipy-openblas")
    assert NUMPY_BLAS


@needs_numpy_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n, ta, tb", [(100, 784, 512, False, True), (512, 100, 784, True, False),
                                             (100, 10, 512, False, False), (100, 512, 10, False, True),
                                             (33, 17, 9, True, True), (1, 5, 1, False, False)])
def test_the_kernel_is_numpys_matmul_bit_for_bit(m, k, n, ta, tb, dtype):
    a = RNG.uniform(-2, 2, (k, m) if ta else (m, k)).astype(dtype)
    b = RNG.uniform(-2, 2, (n, k) if tb else (k, n)).astype(dtype)
    kernel, out = matmul_kernel(a, b, ta, tb)
    assert kernel.fused([a, b], [out]).fn is nn._dot_np
    kernel([a, b], [out])
    expected = np.matmul(a.T if ta else a, b.T if tb else b)
    if m > 1 and n > 1:  # a product with one row or column NumPy computes by gemv or dot, not gemm
        assert out.tobytes() == expected.tobytes()
    np.testing.assert_allclose(out, (a.T if ta else a).astype(np.float64) @ (b.T if tb else b), rtol=1e-4, atol=1e-4)


@needs_numpy_blas
def test_strided_operands_and_empty_sums_fall_back_to_numbas_dot():
    b = RNG.uniform(-1, 1, (5, 3)).astype(np.float32)
    wide = RNG.uniform(-1, 1, (7, 10)).astype(np.float32)
    out = np.full((7, 3), 7, np.float32)
    nn._dot_np(wide[:, :5], b, out)  # rows of 10 floats: neither C nor a transpose of C
    np.testing.assert_allclose(out, wide[:, :5] @ b, rtol=1e-6)
    nn._dot_np(np.ones((7, 0), np.float32), np.ones((0, 3), np.float32), out)
    np.testing.assert_array_equal(out, np.zeros((7, 3), np.float32))


def test_switched_off_the_kernel_keeps_numbas_dot():
    code = ("import numpy as np\nfrom flowlab.kernels.numba_cpu import nn, npblas\n"
            "from tests.ops.test_small_matmul import matmul_kernel\n"
            "a, b = np.ones((20, 30), np.float32), np.ones((30, 40), np.float32)\n"
            "kernel, out = matmul_kernel(a, b, False, False)\n"
            "kernel([a, b], [out])\n"
            "assert not npblas.ready() and kernel.fused([a, b], [out]).fn is nn._dot and (out == 30).all()\n")
    env = {**os.environ, "FLOWLAB_NUMPY_BLAS": "0"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
