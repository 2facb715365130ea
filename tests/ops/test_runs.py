"""kernels/numba_cpu/runs.py: copy_run and add_run (8-wide vector moves with an overlapping tail vector) against
NumPy's slice copy and add, bit for bit, for every run length around the vector width and its multiples, at
offsets that are not vector aligned, float32 and float64; the values around the run stay untouched."""

from __future__ import annotations

import numpy as np
import pytest

from flowlab.kernels.numba_cpu._numba import njit
from flowlab.kernels.numba_cpu.runs import add_run, copy_run


@njit
def _copy(dst, d0, src, s0, n):
    copy_run(dst, d0, src, s0, n)


@njit
def _add(dst, d0, src, s0, n):
    add_run(dst, d0, src, s0, n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_runs_equal_numpy_slices_bit_for_bit(dtype):
    rng = np.random.default_rng(5)
    for n in range(0, 42):
        for d0, s0 in ((0, 0), (3, 5), (1, 0), (7, 2)):
            src = rng.standard_normal(64).astype(dtype)
            dst = rng.standard_normal(64).astype(dtype)
            want, got = dst.copy(), dst.copy()
            want[d0:d0 + n] = src[s0:s0 + n]
            _copy(got, d0, src, s0, n)
            np.testing.assert_array_equal(got, want, err_msg=f"copy n={n} d0={d0} s0={s0}")
            want, got = dst.copy(), dst.copy()
            want[d0:d0 + n] += src[s0:s0 + n]  # each element summed once: the overlap is not added twice
            _add(got, d0, src, s0, n)
            np.testing.assert_array_equal(got, want, err_msg=f"add n={n} d0={d0} s0={s0}")


def test_runs_refuse_mixed_dtypes():
    with pytest.raises(Exception, match="one dtype"):
        _copy(np.zeros(16, np.float32), 0, np.zeros(16), 0, 8)
