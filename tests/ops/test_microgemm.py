"""The register-blocked GEMM micro-kernel (kernels/numba_cpu/microgemm.py) against NumPy float64: partial row
blocks, both layouts of A, beta, the inner dimension from 1, both dtypes; rows past m never written; the block's
shape follows the vector width of the CPU Numba compiles for. test_microgemm_avx2.py runs these tests again with
Numba's target set to Haswell (AVX2)."""

from __future__ import annotations

import numpy as np
import pytest

from flowlab.kernels.numba_cpu.microgemm import MR, VECTOR_BYTES, gemm_blocked, nr, pad_cols


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, ta, beta", [(1, 1, False, False), (MR, 32, False, False), (MR + 3, 5, False, True),
                                            (3 * MR - 1, 128, True, True), (7, 33, True, False)])
def test_blocked_gemm_against_float64(dtype, m: int, k: int, ta: bool, beta: bool) -> None:
    rng = np.random.default_rng(m * 100 + k)
    n = 2 * nr(dtype)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = rng.standard_normal((m + 2, n)).astype(dtype)  # two rows past m: must stay as they are
    before = c.copy()
    gemm_blocked(ta, m, n, k, a.reshape(-1), 0, a.shape[1], b.reshape(-1), 0, n, beta, c.reshape(-1), 0, n)
    want = (a.T if ta else a).astype(np.float64) @ b.astype(np.float64) + (before[:m] if beta else 0)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    assert np.abs(c[:m] - want).max() <= tol * max(1.0, np.abs(want).max()) * k ** 0.5
    assert c[m:].tobytes() == before[m:].tobytes()


def test_the_block_fits_the_target_and_pad_cols_rounds_to_it() -> None:
    """AVX-512: 8 rows x 2 zmm (8 x 32 float32); AVX2 and narrower: 6 rows x 2 vectors (6 x 16 float32 in ymm)."""
    rows, cols = {64: (8, 32), 32: (6, 16), 16: (6, 8)}[VECTOR_BYTES]
    assert (MR, nr(np.float32), nr(np.float64)) == (rows, cols, cols // 2)
    assert [pad_cols(v, np.float32) for v in (1, cols, cols + 1, 2 * cols)] == [cols, cols, 2 * cols, 2 * cols]
