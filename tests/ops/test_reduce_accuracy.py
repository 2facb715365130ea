"""float32 reductions over long runs stay within OneFlow's test tolerance of the float64 sum (v0.3.4's
test_reduce_sum.py: rtol = atol = 1e-5 on rows of 2^20 elements): every summing path of both CPU kernel tiers
(rows, leading axes, a middle kept block, a transposed copy, all axes, reduce_sum_like) accumulates in float64.
A sequential float32 sum of 2^20 values in [0, 1) is about 3e-5 off; the bound here is 1e-6 (a few float32 ulps)."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import run_op

IMPLS = ["reference", "numba"]
RNG = np.random.default_rng(2023)
RTOL = 1e-6


def rand(*shape: int) -> np.ndarray:
    # OneFlow's test data: np.random.rand through float16 (values with 11 significant bits)
    return RNG.random(shape).astype(np.float16).astype(np.float32)


# (shape, axis): OneFlow's row, column, scalar and 3-D cases, then each Numba path at a million elements
CASES = [
    ((25, 1024 * 1024), [1]), ((1024 * 64, 25), [0]), ((1024 * 64, 25), [0, 1]),
    ((64, 64, 64), None), ((64, 64, 64), [1]), ((64, 64, 64), [0, 2]),
    ((2, 1_000_000), [1]),  # rows
    ((1_000_000, 2), [0]),  # leading axes (a bias gradient)
    ((40, 3, 25_000), [0, 2]),  # a middle kept block (an NCHW bias gradient)
    ((2, 500_000, 2), [1]),  # kept axes around the reduced one: a transposed copy, then rows
    ((1000, 1000), None),  # everything
]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean"])
@pytest.mark.parametrize("shape, axis", CASES, ids=[f"{s}-{a}" for s, a in CASES])
def test_float32_reductions_match_float64(impl, op, shape, axis):
    x = rand(*shape)
    attrs = {"axis": None if axis is None else tuple(axis), "keepdims": False}
    (y,) = run_op(op, {"input_tensor": [x]}, attrs, impl)
    x64 = x.astype(np.float64)
    want = x64.sum(axis=None if axis is None else tuple(axis))
    if op == "reduce_mean":
        want = want / (x.size / np.size(want))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, np.reshape(want, y.shape), rtol=RTOL, atol=0)


@pytest.mark.parametrize("impl", IMPLS)
def test_small_terms_after_a_large_one_are_not_lost(impl):
    # float32 adding 1e-8 to 1.0 gives 1.0: a sequential float32 sum of these rows returns 1.0 (6.5e-4 off)
    x = np.full((3, 65536), 1e-8, np.float32)
    x[:, 0] = 1.0
    want = 1.0 + 65535 * np.float64(np.float32(1e-8))
    for shape, axis in (((3, 65536), [1]), ((65536, 3), [0])):
        (y,) = run_op("reduce_sum", {"input_tensor": [x.reshape(shape) if axis == [1] else x.T.copy()]},
                      {"axis": tuple(axis), "keepdims": False}, impl)
        np.testing.assert_allclose(y, want, rtol=RTOL)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("shape, like", [((1_000_000, 3), (3,)), ((1_000_000, 3), (1, 3)), ((4, 250_000), (4, 1))])
def test_reduce_sum_like_matches_float64(impl, shape, like):
    x = rand(*shape)
    (y,) = run_op("reduce_sum_like", {"x": [x], "like": [np.zeros(like, np.float32)]}, {}, impl)
    x64 = x.astype(np.float64)
    want = x64.sum(axis=0) if len(like) == 1 else x64.sum(axis=0 if like[0] == 1 else 1, keepdims=True)
    np.testing.assert_allclose(y, np.reshape(want, like), rtol=RTOL, atol=0)


@pytest.mark.parametrize("impl", IMPLS)
def test_integer_sums_still_wrap_as_numpy(impl):
    x = np.full((2, 300), 100, np.int8)  # 30000 wraps in int8 as NumPy's astype does
    (y,) = run_op("reduce_sum", {"input_tensor": [x]}, {"axis": (1,), "keepdims": False}, impl)
    np.testing.assert_array_equal(y, np.full(2, 30000, np.int64).astype(np.int8))


@pytest.mark.parametrize("impl", IMPLS)
def test_special_values_propagate(impl):
    x = np.ones((4, 1000), np.float32)
    x[0, 7], x[1, 500], x[2, 3], x[2, 900], x[3, :] = np.nan, np.inf, np.inf, -np.inf, -0.0
    (y,) = run_op("reduce_sum", {"input_tensor": [x]}, {"axis": (1,), "keepdims": False}, impl)
    assert np.isnan(y[0]) and y[1] == np.inf and np.isnan(y[2])
    assert y[3] == 0

