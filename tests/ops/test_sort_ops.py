"""flow.sort, flow.argsort and flow.math.top_k (ops/sort_ops.py) through jobs against NumPy's stable sort: every
axis, both directions, ties (equal values keep their index order, as OneFlow's comparators), integer and float
dtypes, k above the axis' length, both CPU kernel modes. (OneFlow's own tests need dynamic blobs: their ports are a
strict xfail; the CUDA kernels: op_samples.py's suites.)"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

RNG = np.random.default_rng(9)


def _np_order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    key = (~x if x.dtype.kind in "iu" else -x) if descending else x
    return np.argsort(key, axis=axis, kind="stable")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_argsort_top_k(kernel_impl, dtype, axis):
    x = RNG.integers(0, 5, (4, 6, 5)).astype(dtype)  # many ties
    flow_dtype = {np.float32: flow.float32, np.int32: flow.int32, np.int64: flow.int64}[dtype]
    flow.clear_default_session()

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder(x.shape, dtype=flow_dtype)) -> tuple[tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy]:
        return (flow.sort(a, axis, "DESCENDING"), flow.argsort(a, axis), flow.argsort(a, axis, "DESCENDING"),
                flow.math.top_k(a, axis, k=3))

    s, asc, desc, top = job(x)
    np.testing.assert_array_equal(s, np.take_along_axis(x, _np_order(x, axis, True), axis=axis))
    np.testing.assert_array_equal(asc, _np_order(x, axis, False))
    np.testing.assert_array_equal(desc, _np_order(x, axis, True))
    np.testing.assert_array_equal(top, np.take(_np_order(x, axis, True), range(3), axis=axis))
    assert asc.dtype == top.dtype == np.int32


def test_top_k_with_k_above_the_length_gives_every_index():
    x = np.array([[0.5, 2.0, -1.0]], np.float32)
    flow.clear_default_session()

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((1, 3))) -> tp.Numpy:
        return flow.math.top_k(a, k=10)

    np.testing.assert_array_equal(job(x), [[1, 0, 2]])


def test_bad_direction_is_refused():
    with pytest.raises(ValueError, match="direction must be one of"):
        flow.sort(None, direction="UP")


def test_in_top_k_ties_and_non_finite_rows(kernel_impl):
    pred = np.array([[0.1, 0.5, 0.5, 0.2], [0.3, 0.1, 0.2, 0.9], [np.inf, 0.1, 0.2, 0.3], [0.4, 0.3, 0.2, 0.1]],
                    np.float32)
    targets = np.array([2, 0, 1, 3], np.int32)
    flow.clear_default_session()

    @flow.global_function()
    def job(t: tp.Numpy.Placeholder((4,), dtype=flow.int32), p: tp.Numpy.Placeholder((4, 4))) -> tp.Numpy:
        return flow.math.in_top_k(t, p, k=2)

    # row 0: class 2 ties class 1 at the top (in); row 1: 0.3 has one above (in); row 2: an inf says nothing;
    # row 3: class 3 has three above (out)
    out = job(targets, pred)
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, [1, 1, 0, 0])
