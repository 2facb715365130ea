"""flow.gather_nd, flow.scatter_nd, flow.tensor_scatter_nd_update / _add and flow.dim_gather: jobs against NumPy
(with their gradients through watch_diff: gather_nd <-> scatter_nd, tensor_scatter_nd_update zeroing the
overwritten positions, dim_gather's scatter-add), both CPU kernels against NumPy with duplicate indices, a split
signature on 2 devices against 1, and errors. (OneFlow's files: tests/oneflow/test_gather_nd.py, test_scatter_nd.py,
test_dim_gather.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError

from .helpers import run_op

RNG = np.random.default_rng(3131)
IMPLS = ["reference", "numba"]


def _nd_ids(batch: tuple[int, ...], dims: tuple[int, ...]) -> np.ndarray:
    return np.stack([RNG.integers(0, d, batch) for d in dims], axis=-1).astype(np.int32)


def _np_gather_nd(params, ids):
    k = ids.shape[-1]
    rows = ids.reshape(int(np.prod(ids.shape[:-1])), k)
    out = np.stack([params[tuple(r)] for r in rows])
    return out.reshape(ids.shape[:-1] + params.shape[k:])


def _np_scatter(base, ids, updates, add):
    out = base.astype(np.float64).copy()
    k = ids.shape[-1]
    rows = ids.reshape(int(np.prod(ids.shape[:-1])), k)
    ups = updates.reshape((rows.shape[0],) + base.shape[k:])
    for r, u in zip(rows, ups):
        if add:
            out[tuple(r)] += u
        else:
            out[tuple(r)] = u
    return out


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("params_shape, batch, k", [((6,), (5,), 1), ((4, 3, 2), (2, 3), 2), ((3, 2, 4), (4,), 3),
                                                    ((3, 4), (2,), 0)])
def test_kernels_with_duplicate_indices(impl, params_shape, batch, k):
    params = RNG.standard_normal(params_shape)
    ids = _nd_ids(batch, params_shape[:k]) if k else np.zeros(batch + (0,), np.int32)
    updates = RNG.standard_normal(batch + params_shape[k:])
    (out,) = run_op("gather_nd", {"params": [params], "indices": [ids]}, {}, impl)
    np.testing.assert_array_equal(out, _np_gather_nd(params, ids))
    zeros = np.zeros(params_shape)
    (out,) = run_op("scatter_nd", {"indices": [ids], "updates": [updates]}, {"shape": params_shape}, impl)
    np.testing.assert_allclose(out, _np_scatter(zeros, ids, updates, True), rtol=1e-13)
    (out,) = run_op("scatter_nd_like", {"like": [params], "indices": [ids], "updates": [updates]}, {}, impl)
    np.testing.assert_allclose(out, _np_scatter(zeros, ids, updates, True), rtol=1e-13)
    (out,) = run_op("tensor_scatter_nd_add", {"params": [params], "updates": [updates], "indices": [ids]}, {}, impl)
    np.testing.assert_allclose(out, _np_scatter(params, ids, updates, True), rtol=1e-13)
    (out,) = run_op("tensor_scatter_nd_update", {"params": [params], "updates": [updates], "indices": [ids]}, {},
                    impl)
    np.testing.assert_array_equal(out, _np_scatter(params, ids, updates, False))  # the last duplicate wins


@pytest.mark.parametrize("impl", IMPLS)
def test_out_of_range_coordinates_name_the_axis(impl):
    params, ids = RNG.standard_normal((4, 3)), np.array([[1, 2], [3, 3]], np.int32)
    with pytest.raises(IndexError, match=r"index 3 \(at flat position 3 of shape \(2, 2\)\) is out of range "
                                         r"\[0, 3\) along axis 1 of 'params' \(shape \(4, 3\)\)"):
        run_op("gather_nd", {"params": [params], "indices": [ids]}, {}, impl)
    with pytest.raises(IndexError, match=r"index -1 .* along axis 0 of 'shape'"):
        run_op("scatter_nd", {"indices": [np.array([[-1]], np.int32)], "updates": [np.ones((1, 3))]},
               {"shape": (4, 3)}, impl)
    with pytest.raises(IndexError, match=r"index 4 .* out of range \[0, 3\) along axis 1 of 'input'"):
        run_op("dim_gather", {"input": [params], "index": [np.array([[0], [4], [1], [2]], np.int32)]}, {"dim": 1},
               impl)


def test_gather_nd_and_scatter_nd_through_jobs_with_gradients():
    flow.clear_default_session()
    params, ids = RNG.standard_normal((5, 4, 3)), _nd_ids((3, 2), (5, 4))
    w_out = RNG.standard_normal((3, 2, 3))
    grads: dict = {}

    @flow.global_function(type="train")
    def nd_job(p: tp.Numpy.Placeholder((5, 4, 3), dtype=flow.float64),
               i: tp.Numpy.Placeholder((3, 2, 2), dtype=flow.int32),
               w: tp.Numpy.Placeholder((3, 2, 3), dtype=flow.float64)) -> tuple[tp.Numpy, tp.Numpy]:
        x = flow.get_variable("x", shape=(5, 4, 3), dtype=flow.float64, initializer=flow.zeros_initializer())
        u = flow.get_variable("u", shape=(3, 2, 3), dtype=flow.float64, initializer=flow.zeros_initializer())
        x, u = x + p, u + w
        g = flow.gather_nd(x, i)
        s = flow.scatter_nd(i, u, (5, 4, 3))
        loss = flow.math.reduce_sum(g * w) + flow.math.reduce_sum(s * p)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        flow.watch_diff(x, lambda d: grads.__setitem__("x", d.numpy()))
        flow.watch_diff(u, lambda d: grads.__setitem__("u", d.numpy()))
        return g, s

    g, s = nd_job(params, ids, w_out)
    np.testing.assert_array_equal(g, _np_gather_nd(params, ids))
    np.testing.assert_allclose(s, _np_scatter(np.zeros((5, 4, 3)), ids, w_out, True), rtol=1e-13)
    # d<gather_nd(x), w>/dx = scatter_nd(w) (duplicates add); d<scatter_nd(u), p>/du = gather_nd(p)
    np.testing.assert_allclose(grads["x"], _np_scatter(np.zeros((5, 4, 3)), ids, w_out, True), rtol=1e-13)
    np.testing.assert_allclose(grads["u"], _np_gather_nd(params, ids), rtol=1e-13)


@pytest.mark.parametrize("op", ["update", "add"])
def test_tensor_scatter_through_a_job_with_gradients(op):
    flow.clear_default_session()
    params, updates = RNG.standard_normal((6, 3)), RNG.standard_normal((4, 3))
    ids = RNG.permutation(6)[:4].astype(np.int32).reshape(4, 1)  # distinct: update's gradient is defined
    dy = RNG.standard_normal((6, 3))
    grads: dict = {}
    fn = flow.tensor_scatter_nd_update if op == "update" else flow.tensor_scatter_nd_add

    @flow.global_function(type="train")
    def ts_job(p: tp.Numpy.Placeholder((6, 3), dtype=flow.float64), i: tp.Numpy.Placeholder((4, 1), dtype=flow.int32),
               v: tp.Numpy.Placeholder((4, 3), dtype=flow.float64),
               w: tp.Numpy.Placeholder((6, 3), dtype=flow.float64)) -> tp.Numpy:
        x = flow.get_variable("x", shape=(6, 3), dtype=flow.float64, initializer=flow.zeros_initializer()) + p
        u = flow.get_variable("u", shape=(4, 3), dtype=flow.float64, initializer=flow.zeros_initializer()) + v
        out = fn(x, i, u)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(out * w))
        flow.watch_diff(x, lambda d: grads.__setitem__("x", d.numpy()))
        flow.watch_diff(u, lambda d: grads.__setitem__("u", d.numpy()))
        return out

    out = ts_job(params, ids, updates, dy)
    np.testing.assert_allclose(out, _np_scatter(params, ids, updates, op == "add"), rtol=1e-13)
    want_x = dy.copy()
    if op == "update":
        want_x[ids[:, 0]] = 0  # overwritten positions pass no gradient to params
    np.testing.assert_allclose(grads["x"], want_x, rtol=1e-13)
    np.testing.assert_allclose(grads["u"], dy[ids[:, 0]], rtol=1e-13)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_dim_gather_through_a_job_with_gradient(dim):
    flow.clear_default_session()
    x = RNG.standard_normal((3, 4, 2))
    index_shape = list(x.shape)
    index_shape[dim] = 5
    index = RNG.integers(0, x.shape[dim], index_shape).astype(np.int64)
    w = RNG.standard_normal(index_shape)
    grads: dict = {}

    @flow.global_function(type="train")
    def dg_job(a: tp.Numpy.Placeholder((3, 4, 2), dtype=flow.float64),
               i: tp.Numpy.Placeholder(tuple(index_shape), dtype=flow.int64),
               v: tp.Numpy.Placeholder(tuple(index_shape), dtype=flow.float64)) -> tp.Numpy:
        t = flow.get_variable("t", shape=(3, 4, 2), dtype=flow.float64, initializer=flow.zeros_initializer()) + a
        y = flow.dim_gather(t, dim, i)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(y * v))
        flow.watch_diff(t, lambda d: grads.__setitem__("t", d.numpy()))
        return y

    for _ in range(2):  # both tiers
        np.testing.assert_array_equal(dg_job(x, index, w), np.take_along_axis(x, index, dim))
        want = np.zeros_like(x)
        for pos, value in np.ndenumerate(w):
            target = list(pos)
            target[dim] = index[pos]
            want[tuple(target)] += value
        np.testing.assert_allclose(grads["t"], want, rtol=1e-13)


def test_gather_nd_split_on_two_devices_equals_one_device():
    params, ids = RNG.standard_normal((6, 4)).astype(np.float32), _nd_ids((4,), (6,))
    results, sigs = [], None
    for devices in (1, 2):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)

        @flow.global_function()
        def gnd(p: tp.Numpy.Placeholder((6, 4)), i: tp.Numpy.Placeholder((4, 1), dtype=flow.int32)) -> tp.Numpy:
            return flow.gather_nd(p, i)

        results.append(gnd(params, ids))
        sigs = flow.default_session().job_set.job("gnd").sbp_signatures
    flow.clear_default_session()
    flow.config.cpu_device_num(1)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], _np_gather_nd(params, ids))
    assert next(str(s) for name, s in sigs.items() if "gather_nd" in name.lower()) == \
        "{params_0: B, indices_0: S(0), out_0: S(0)}"


def test_errors_at_the_users_line():
    flow.clear_default_session()

    @flow.global_function()
    def bad_updates(i: tp.Numpy.Placeholder((3, 1), dtype=flow.int32), u: tp.Numpy.Placeholder((3, 4))) -> tp.Numpy:
        return flow.scatter_nd(i, u, (5, 3))

    with pytest.raises(OpInferError, match=r"test_nd_index_ops.py:\d+.*updates f32\[3,4\] must have shape \[3, 3\]"):
        bad_updates(np.zeros((3, 1), np.int32), np.zeros((3, 4), np.float32))

    flow.clear_default_session()

    @flow.global_function()
    def too_many(p: tp.Numpy.Placeholder((3,)), i: tp.Numpy.Placeholder((2, 2), dtype=flow.int32)) -> tp.Numpy:
        return flow.gather_nd(p, i)

    with pytest.raises(OpInferError, match=r"hold 2 coordinates, more than the 1 axes"):
        too_many(np.zeros(3, np.float32), np.zeros((2, 2), np.int32))

    flow.clear_default_session()

    @flow.global_function()
    def bad_index(x: tp.Numpy.Placeholder((3, 4)), i: tp.Numpy.Placeholder((2, 4), dtype=flow.int32)) -> tp.Numpy:
        return flow.dim_gather(x, 1, i)

    with pytest.raises(OpInferError, match=r"index i32\[2,4\] must have input f32\[3,4\]'s rank and its lengths"):
        bad_index(np.zeros((3, 4), np.float32), np.zeros((2, 4), np.int32))
