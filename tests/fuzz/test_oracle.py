"""The fuzz oracle against hand values: it must be able to tell flowlab it is wrong."""

from __future__ import annotations

import numpy as np

from .oracle import INF, _binary, _reduce, _softmax, _unary, mismatches

Z = np.zeros


def test_int_division_truncates_toward_zero_and_by_zero_gives_zero() -> None:
    x = np.array([7, -7, 7, -7, 5, 2**31 - 1], np.int32)
    y = np.array([2, 2, -2, -2, 0, -1], np.int32)
    v, e = _binary("div", (x, Z(6)), (y, Z(6)))
    assert v.tolist() == [3, -3, -3, 3, 0, -(2**31 - 1)] and not e.any()


def test_int_arithmetic_wraps() -> None:
    big = np.array([2**31 - 1], np.int32)
    assert _binary("add", (big, Z(1)), (np.array([1], np.int32), Z(1)))[0].tolist() == [-(2**31)]


def test_nan_propagates_through_relu_and_max() -> None:
    x = np.array([[np.nan, 1.0], [-0.0, -2.0]], np.float32)
    v, e = _unary("relu", (x, Z((2, 2))), {})
    assert np.isnan(v[0, 0]) and v[0, 1] == 1 and not np.signbit(v[1, 0]) and v[1, 1] == 0
    m, _ = _reduce("reduce_max", (x, Z((2, 2))), {"axis": 1, "keepdims": False}, (2,))
    assert np.isnan(m[0]) and m[1] == 0


def test_softmax_row_with_inf_is_nan_and_open_inputs_stay_open() -> None:
    x = np.array([[np.inf, 0.0], [0.0, 0.0]], np.float32)
    v, e = _softmax((x, Z((2, 2))))
    assert np.isnan(v[0]).all() and np.allclose(v[1], 0.5)
    # a sum whose partial sums may overflow is open, and stays open through a bounded function
    big = np.array([3e38, 3e38, -3e38], np.float32)
    s = _reduce("reduce_sum", (big, Z(3)), {"axis": None, "keepdims": False}, (1,))
    assert np.isinf(s[1]).all()
    assert np.isinf(_unary("sigmoid", s, {})[1]).all()
    assert np.isinf(_binary("mul", (np.zeros(1, np.float32), Z(1)), s)[1]).all()


def test_mismatches_reports_wrong_values_and_skips_open_ones() -> None:
    expected = (np.array([1.0, np.nan, np.inf, 2.0], np.float32), np.array([0, 0, 0, INF]))
    assert mismatches(np.array([1.0, np.nan, np.inf, 99.0], np.float32), expected) is None
    assert "1 of 4" in mismatches(np.array([1.0, 0.0, np.inf, 2.0], np.float32), expected)
    assert "1 of 4" in mismatches(np.array([1.0001, np.nan, np.inf, 2.0], np.float32), expected)
    assert "float64" in mismatches(np.array([1.0, np.nan, np.inf, 2.0]), expected)
