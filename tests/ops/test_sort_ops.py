"""flow.sort, flow.argsort, flow.math.top_k, flow.math.in_top_k, flow.math.unsorted_segment_sum(_like) and
unsorted_batch_segment_sum: through jobs against NumPy (stable sorts: OneFlow's comparator puts equal values in
index order in both directions), both CPU kernels against NumPy with many ties, the gradient of the segment sum,
2 devices against 1 with the chosen signature, and errors at the user's line. (OneFlow's own test files:
tests/oneflow/test_argsort.py, test_sort.py, test_top_k.py, test_in_top_k.py, test_unsorted_segment_sum*.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError

from .helpers import run_op

RNG = np.random.default_rng(2323)
IMPLS = ["reference", "numba"]


def _np_argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable, ties by index, without negating (which would wrap the smallest integer)."""
    x = np.moveaxis(x, axis, -1)
    order = np.array([sorted(range(r.size), key=lambda j, r=r: (-r[j] if descending else r[j], j))
                      for r in x.astype(np.float64).reshape(-1, x.shape[-1])]).reshape(x.shape)
    return np.moveaxis(order, -1, axis)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
def test_sort_kernels_with_ties(impl, dtype, direction):
    x = RNG.integers(-3, 4, (6, 9)).astype(dtype)  # 7 values in rows of 9: ties everywhere
    x[0, 0] = np.iinfo(dtype).min if dtype in (np.int32, np.int64) else -np.inf
    want = _np_argsort(x, -1, direction == "DESCENDING")
    (idx,) = run_op("arg_sort", {"in": [x]}, {"direction": direction}, impl)
    (vals,) = run_op("sort", {"in": [x]}, {"direction": direction}, impl)
    assert idx.dtype == np.int32
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, want, -1))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("k", [1, 4, 9, 20])
def test_top_k_kernels_with_ties(impl, k):
    x = RNG.integers(0, 5, (7, 9)).astype(np.int64)
    desc = _np_argsort(x, -1, True)
    (out,) = run_op("top_k", {"in": [x]}, {"k": k, "sorted": True}, impl)
    np.testing.assert_array_equal(out, desc[:, :min(k, 9)])


def _np_in_top_k(targets, predictions, k):
    out = []
    for t, row in zip(targets, predictions):
        ok = 0 <= t < row.size and np.isfinite(row).all()
        out.append(int(ok and np.sum(row > row[t]) < k))
    return np.array(out, np.int8)


@pytest.mark.parametrize("impl", IMPLS)
def test_in_top_k_kernels(impl):
    pred = RNG.integers(0, 4, (12, 5)).astype(np.float32)  # ties straddle the boundary: all count as in
    pred[3, 2] = np.inf
    pred[7, 0] = np.nan
    targets = RNG.integers(0, 5, 12).astype(np.int32)
    targets[5] = 5  # no class: false, as OneFlow's "cannot say"
    for k in (0, 1, 2, 3, 5):
        (out,) = run_op("in_top_k", {"targets": [targets], "predictions": [pred]}, {"k": k}, impl)
        assert out.dtype == np.int8
        np.testing.assert_array_equal(out, _np_in_top_k(targets, pred, k), err_msg=f"k={k}")


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_argsort_top_k_through_a_job(axis):
    flow.clear_default_session()
    x = RNG.standard_normal((4, 5, 6)).astype(np.float32)

    @flow.global_function()
    def sort_job(a: tp.Numpy.Placeholder((4, 5, 6))) -> tuple[tp.Numpy, tp.Numpy, tp.Numpy]:
        return flow.sort(a, axis, "DESCENDING"), flow.argsort(a, axis), flow.math.top_k(a, axis, k=3)

    for _ in range(2):  # the tiered mode's two tiers: reference kernels, then Numba's
        values, order, top = sort_job(x)
        np.testing.assert_array_equal(values, -np.sort(-x, axis=axis))
        np.testing.assert_array_equal(order, np.argsort(x, axis=axis, kind="stable"))
        desc = np.argsort(-x, axis=axis, kind="stable")
        np.testing.assert_array_equal(top, np.take(desc, range(3), axis=axis))


def test_docstring_examples():
    flow.clear_default_session()

    @flow.global_function()
    def ex(x: tp.Numpy.Placeholder((5,)), t: tp.Numpy.Placeholder((2,), dtype=flow.int32),
           p: tp.Numpy.Placeholder((2, 4))) -> tuple[tp.Numpy, tp.Numpy, tp.Numpy]:
        return flow.sort(input=x), flow.argsort(input=x), flow.math.in_top_k(t, p, k=1)

    s, a, i = ex(np.array([10, 2, 9, 3, 7], np.float32), np.array([3, 1], np.int32),
                 np.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0]], np.float32))
    np.testing.assert_array_equal(s, [2, 3, 7, 9, 10])
    np.testing.assert_array_equal(a, [1, 3, 4, 2, 0])
    np.testing.assert_array_equal(i, [1, 0])  # OneFlow's docstring: out [1 0]


def test_sort_errors_at_the_users_line():
    flow.clear_default_session()

    @flow.global_function()
    def bad_dir(x: tp.Numpy.Placeholder((3, 4))) -> tp.Numpy:
        return flow.sort(x, -1, "UP")

    with pytest.raises(OpInferError, match=r"test_sort_ops.py:\d+.*direction must be 'ASCENDING' or 'DESCENDING'"):
        bad_dir(np.zeros((3, 4), np.float32))

    flow.clear_default_session()

    @flow.global_function()
    def bad_axis(x: tp.Numpy.Placeholder((3, 4))) -> tp.Numpy:
        return flow.math.top_k(x, 2, k=1)

    with pytest.raises(OpInferError, match=r"top_k: axis must be an int in \[-2, 2\)"):
        bad_axis(np.zeros((3, 4), np.float32))

    flow.clear_default_session()

    @flow.global_function()
    def bad_pred(t: tp.Numpy.Placeholder((3,), dtype=flow.int32), p: tp.Numpy.Placeholder((4, 5))) -> tp.Numpy:
        return flow.math.in_top_k(t, p, k=1)

    with pytest.raises(OpInferError, match=r"one row per target"):
        bad_pred(np.zeros(3, np.int32), np.zeros((4, 5), np.float32))


# -- segment sums -----------------------------------------------------------------------------------------------
def _np_segment_sum(data, ids, n, axis):
    out = np.zeros(data.shape[:axis] + (n,) + data.shape[axis + ids.ndim:])
    moved = np.moveaxis(out, axis, 0)
    d = data.reshape(data.shape[:axis] + (ids.size,) + data.shape[axis + ids.ndim:])
    for j, s in enumerate(ids.reshape(-1)):
        moved[s] += np.take(d, j, axis=axis)
    return out


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_unsorted_segment_sum_and_like_through_a_job_with_gradient(axis):
    flow.clear_default_session()
    ids = RNG.integers(0, 4, (3, 2)).astype(np.int32)
    shape = (5, 5)[:axis] + (3, 2) + (2, 3)[axis:]
    data = RNG.standard_normal(shape)
    out_shape = shape[:axis] + (4,) + shape[axis + 2:]
    dy = RNG.standard_normal(out_shape)

    @flow.global_function(type="train")
    def seg(d: tp.Numpy.Placeholder(shape, dtype=flow.float64), i: tp.Numpy.Placeholder((3, 2), dtype=flow.int32),
            w: tp.Numpy.Placeholder(out_shape, dtype=flow.float64)) -> tuple[tp.Numpy, tp.Numpy]:
        x = flow.get_variable("x", shape=shape, dtype=flow.float64, initializer=flow.zeros_initializer())
        x = x + d
        y = flow.math.unsorted_segment_sum(x, i, num_segments=4, axis=axis)
        like = flow.math.unsorted_segment_sum_like(d, i, w, axis=axis)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(y * w))
        flow.watch_diff(x, grads.append)
        return y, like

    grads: list = []
    y, like = seg(data, ids, dy)
    want = _np_segment_sum(data, ids, 4, axis)
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(like, want, rtol=1e-12, atol=1e-12)
    # d/dx sum(segsum(x) * w) = w gathered by the ids (OneFlow's gradient op: gather)
    np.testing.assert_allclose(grads[0].numpy(), np.take(dy, ids, axis=axis), rtol=1e-12)


def test_unsorted_batch_segment_sum_user_function():
    flow.clear_default_session()
    ids = RNG.integers(0, 5, (2, 3, 4)).astype(np.int32)
    data = RNG.standard_normal((2, 3, 4, 2)).astype(np.float32)

    @flow.global_function()
    def bseg(d: tp.Numpy.Placeholder((2, 3, 4, 2)), i: tp.Numpy.Placeholder((2, 3, 4), dtype=flow.int32)
             ) -> tp.Numpy:
        return flow.math.unsorted_batch_segment_sum(d, i, num_segments=5)

    want = np.zeros((2, 3, 5, 2))
    for (a, b, c), s in np.ndenumerate(ids):
        want[a, b, s] += data[a, b, c]
    np.testing.assert_allclose(bseg(data, ids), want, rtol=1e-6, atol=1e-6)


def _segment_sum_job(devices: int, id_split: bool):
    @flow.global_function()
    def seg2(d: tp.Numpy.Placeholder((6, 4)), i: tp.Numpy.Placeholder((6,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            if not id_split:
                # data arriving split on axis 1: the values must not change whichever signature is chosen
                d = flow.parallel_cast(d, distribute=flow.distribute.split(1))
            return flow.math.unsorted_segment_sum(d, i, num_segments=3)

    return seg2


@pytest.mark.parametrize("id_split", [True, False])
def test_unsorted_segment_sum_on_two_devices_equals_one_device(id_split):
    data = RNG.standard_normal((6, 4)).astype(np.float32)
    ids = RNG.integers(0, 3, 6).astype(np.int32)
    results, sigs = [], None
    for devices in (1, 2):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)
        results.append(_segment_sum_job(devices, id_split)(data, ids))
        sigs = flow.default_session().job_set.job("seg2").sbp_signatures
    flow.clear_default_session()
    flow.config.cpu_device_num(1)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
    np.testing.assert_allclose(results[0], _np_segment_sum(data, ids, 3, 0), rtol=1e-5, atol=1e-6)
    sig = next(str(s) for name, s in sigs.items() if "segment" in name.lower())
    assert sig == "{data_0: S(0), segment_ids_0: S(0), out_0: P}"


def test_segment_sum_errors():
    flow.clear_default_session()

    @flow.global_function()
    def wrong_ids(d: tp.Numpy.Placeholder((6, 4)), i: tp.Numpy.Placeholder((5,), dtype=flow.int32)) -> tp.Numpy:
        return flow.math.unsorted_segment_sum(d, i, num_segments=3)

    with pytest.raises(OpInferError, match=r"must have the segment ids' shape \(5,\) at axes 0..0"):
        wrong_ids(np.zeros((6, 4), np.float32), np.zeros(5, np.int32))

    flow.clear_default_session()

    @flow.global_function()
    def wrong_like(d: tp.Numpy.Placeholder((6, 4)), i: tp.Numpy.Placeholder((6,), dtype=flow.int32),
                   lk: tp.Numpy.Placeholder((3, 5))) -> tp.Numpy:
        return flow.math.unsorted_segment_sum_like(d, i, lk)

    with pytest.raises(OpInferError, match=r"test_sort_ops.py:\d+.*like .* must be data"):
        wrong_like(np.zeros((6, 4), np.float32), np.zeros(6, np.int32), np.zeros((3, 5), np.float32))

    flow.clear_default_session()

    @flow.global_function()
    def out_of_range(d: tp.Numpy.Placeholder((6, 4)), i: tp.Numpy.Placeholder((6,), dtype=flow.int32)) -> tp.Numpy:
        return flow.math.unsorted_segment_sum(d, i, num_segments=3)

    with pytest.raises(Exception, match=r"segment id 3 .* out of range \[0, 3\)"):
        out_of_range(np.zeros((6, 4), np.float32), np.array([0, 1, 2, 3, 0, 0], np.int32))


@pytest.mark.parametrize("mode", ["reference", "numba"])
def test_segment_sums_split_on_the_segment_axis(mode, monkeypatch):
    """Model parallel (OneFlow's test_unsorted_segment_sum_model_parallel): data and ids broadcast, the output
    split on the segment axis over 3 devices (7 segments: 3, 2, 2); each device sums only its segments' ids."""
    monkeypatch.setenv("FLOWLAB_KERNELS", mode)
    data = RNG.standard_normal((4, 10, 3)).astype(np.float32)
    ids = RNG.integers(0, 7, 10).astype(np.int32)
    like = np.zeros((4, 7, 3), np.float32)
    flow.config.cpu_device_num(3)

    @flow.global_function()
    def mp(d: tp.Numpy.Placeholder((4, 10, 3)), i: tp.Numpy.Placeholder((10,), dtype=flow.int32),
           lk: tp.Numpy.Placeholder((4, 7, 3))) -> tuple[tp.Numpy, tp.Numpy]:
        with flow.scope.placement("cpu", "0:0-2"):
            d = d.with_distribute(flow.distribute.broadcast())
            i = i.with_distribute(flow.distribute.broadcast())
            lk = lk.with_distribute(flow.distribute.split(1))
            return (flow.math.unsorted_segment_sum_like(d, i, lk, axis=1),
                    flow.math.unsorted_segment_sum(d, i, num_segments=7, axis=1))

    want = _np_segment_sum(data, ids, 7, 1)
    for _ in range(2):
        out_like, out = mp(data, ids, like)
        np.testing.assert_allclose(out_like, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    sigs = flow.default_session().job_set.job("mp").sbp_signatures
    like_sig = next(str(s) for name, s in sigs.items() if name.startswith("unsorted_segment_sum_like"))
    assert like_sig == "{data_0: B, segment_ids_0: B, like_0: S(1), out_0: S(1)}"
