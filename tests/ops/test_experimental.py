"""flow.experimental (flowlab/experimental.py): logical_slice's attrs as OneFlow's _GetSliceAttrs checks them, and
the interface blob reads of a name that is no variable. The values: tests/oneflow/test_logical_slice.py,
test_logical_slice_assign.py, test_square_sum.py, test_interface_op_read_and_write.py."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.experimental import _slice_attrs

RNG_EXP = np.random.default_rng(5)


def test_slice_attrs_normalize_and_fill_as_oneflow():
    assert _slice_attrs([(1, -1, 2)], (5, 3)) == [(1, 4, 2), (0, 3, 1)]
    assert _slice_attrs([(None, None, None), (-3, 3, None)], (5, 3)) == [(0, 5, 1), (0, 3, 1)]


@pytest.mark.parametrize("tuples, message", [
    ([(0, 2, 0)], "step must be greater than 0"),
    ([(5, 5, 1)], r"start must be in range \[-size, size\); got 5"),
    ([(0, 6, 1)], r"stop must be in range \[-size, size\]; got 6"),
    ([(0, 2)], r"form \(start, stop, step\)"),
    ([(0, 2, 1)] * 3, "less than or equal to number of dimensions"),
])
def test_slice_attrs_errors(tuples, message):
    with pytest.raises(ValueError, match=message):
        _slice_attrs(tuples, (5, 3))


def test_logical_slice_of_a_split_variable_and_an_unknown_interface_blob():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def sliced() -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            w = flow.get_variable("w", shape=(6, 4), initializer=flow.zeros_initializer(),
                                  distribute=flow.distribute.split(0))
            return flow.experimental.logical_slice(w, [(1, 6, 2)])

    value = np.arange(24, dtype=np.float32).reshape(6, 4)
    flow.experimental.set_interface_blob_value("w", value)
    np.testing.assert_array_equal(sliced(), value[1:6:2])
    with pytest.raises(KeyError, match="no variable 'nope'"):
        flow.experimental.get_interface_blob_value("nope")
    flow.config.cpu_device_num(1)


@pytest.mark.parametrize("impl", ["reference", "numba"])
@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_unique_with_counts_kernels_in_first_appearance_order(impl, dtype):
    from .helpers import run_op

    x = np.array([3, 1, 3, 7, 1, 1, -2], dtype)
    y, idx, count, num = run_op("unique_with_counts", {"x": [x]}, {}, impl)
    np.testing.assert_array_equal(num, [4])
    np.testing.assert_array_equal(y, np.array([3, 1, 7, -2, 0, 0, 0], dtype))
    np.testing.assert_array_equal(idx, [0, 1, 0, 2, 1, 1, 3])
    np.testing.assert_array_equal(count, [2, 3, 1, 1, 0, 0, 0])
    assert idx.dtype == np.int32 and y[idx].tolist() == x.tolist()


def test_unique_with_counts_int64_indices_and_errors():
    flow.clear_default_session()

    @flow.global_function()
    def uniq(x: tp.Numpy.Placeholder((5,), dtype=flow.int32)) -> tp.Numpy:
        return flow.experimental.unique_with_counts(x, out_idx=flow.int64)[1]

    idx = uniq(np.array([4, 4, 2, 4, 9], np.int32))
    assert idx.dtype == np.int64 and idx.tolist() == [0, 0, 1, 0, 2]
    flow.clear_default_session()

    @flow.global_function()
    def two_d(x: tp.Numpy.Placeholder((2, 3), dtype=flow.int32)) -> tp.Numpy:
        return flow.experimental.unique_with_counts(x)[0]

    with pytest.raises(flow.errors.OpInferError, match=r"x must be 1-D"):
        two_d(np.zeros((2, 3), np.int32))


def test_indexed_slices_reduce_sum_of_2d_indices():
    flow.clear_default_session()

    @flow.global_function()
    def reduce(i: tp.Numpy.Placeholder((2, 3), dtype=flow.int64), v: tp.Numpy.Placeholder((2, 3, 2, 2))
               ) -> tp.Numpy:
        y_indices, y_values, num = flow.experimental.indexed_slices_reduce_sum(i, v)
        return y_values

    ids = np.array([[5, 1, 5], [0, 1, 5]], np.int64)
    vals = RNG_EXP.standard_normal((2, 3, 2, 2)).astype(np.float32)
    got = reduce(ids, vals)
    rows = vals.reshape(6, 4).astype(np.float64)
    want = np.zeros((6, 4))
    for k, key in enumerate([5, 1, 0]):  # first appearance
        want[k] = rows[ids.reshape(-1) == key].sum(0)
    np.testing.assert_allclose(got, want, rtol=1e-6)
