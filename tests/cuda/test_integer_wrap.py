"""Integer sums on the GPU wrap into the output dtype as the CPU kernels and NumPy do (two's complement), in the
simulator (which computes in Python/NumPy scalars and refused an out-of-range store with OverflowError) and on
hardware (where a float store would saturate): issue 25."""

from __future__ import annotations

import numpy as np
import pytest

from flowlab.kernels.numba_cuda import launch_config

from .helpers import run

RNG = np.random.default_rng(25)


def _big(dt: type, shape: tuple[int, ...]) -> np.ndarray:
    info = np.iinfo(dt)
    return RNG.integers(info.max // 2, info.max, shape, dtype=np.int64).astype(dt)  # sums overflow


@pytest.mark.parametrize("dt", [np.int32, np.int8, np.uint8])
@pytest.mark.parametrize("axis", [[1], [0, 2]])
def test_an_overflowing_integer_reduce_sum_wraps_as_numpy(dt, axis):
    x = _big(dt, (3, 37, 2))
    x[1, :5] = np.iinfo(dt).min  # negative wraps too (for the signed types)
    expected = x.sum(axis=tuple(axis), dtype=dt)  # NumPy: modular in the output type
    with launch_config(threads=8):
        got = run("reduce_sum", {"input_tensor": [x]}, {"axis": axis, "keepdims": False}, "gpu")[0]
    cpu = run("reduce_sum", {"input_tensor": [x]}, {"axis": axis, "keepdims": False}, "cpu", impl="numba")[0]
    assert got.dtype == cpu.dtype == np.dtype(dt)
    np.testing.assert_array_equal(cpu, expected)
    np.testing.assert_array_equal(got, expected)


def test_an_overflowing_int32_reduce_sum_like_wraps_as_numpy():
    x = _big(np.int32, (4, 5, 3))
    with launch_config(threads=8):
        got = run("reduce_sum_like", {"x": [x], "like": [np.zeros((1, 5, 1), np.int32)]}, {"axis": [0, 2]},
                  "gpu")[0]
    np.testing.assert_array_equal(got, x.sum(axis=(0, 2), keepdims=True, dtype=np.int32))
