"""one_hot, gather(batch_dims=) (batch_gather / unsorted_batch_segment_sum), add_n, identity_n (tuple_identity)
and flow.pad: OneFlow v0.3.4's user functions through a job against NumPy in float64, both CPU kernel
implementations against NumPy, gradients against finite differences, a 2-device run of each split signature
against one device, and the errors for bad input. (The CUDA kernels: tests/cuda/test_kernels.py, from the samples
in op_samples.py; every SBP candidate's exactness: tests/compiler/test_sbp_rules_exact.py.)"""

from __future__ import annotations

from typing import Tuple

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import KernelError, OpInferError
from tests.helpers.gradients import check, v

from .helpers import run_op

RNG = np.random.default_rng(23)
IMPLS = ["reference", "numba"]


def _np_one_hot(x: np.ndarray, depth: int, on, off, axis: int) -> np.ndarray:
    out = np.where(np.arange(depth) == x[..., None], on, off)  # new axis last
    return np.moveaxis(out, -1, axis)


# -- one_hot ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
@pytest.mark.parametrize("idtype, otype", [(np.int32, flow.int32), (np.int64, flow.float64), (np.int32, flow.float32)])
def test_one_hot_through_a_job(axis, idtype, otype):
    """OneFlow's test_one_hot.py: on 5, off 2, each axis, int32/int64 indices, int and floating outputs."""
    flow.clear_default_session()

    @flow.global_function()
    def one_hot_job(x: tp.Numpy.Placeholder((4, 3), dtype=flow.int32 if idtype == np.int32 else flow.int64)
                    ) -> tp.Numpy:
        return flow.one_hot(x, depth=6, on_value=5, off_value=2, axis=axis, dtype=otype)

    x = RNG.integers(0, 6, (4, 3)).astype(idtype)
    out = one_hot_job(x)
    assert out.dtype == otype.np
    np.testing.assert_array_equal(out, _np_one_hot(x, 6, 5, 2, axis))


def test_one_hot_docstring_example_and_label_smoothing_values():
    flow.clear_default_session()

    @flow.global_function()
    def onehot_Job(x: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> tp.Numpy:
        return flow.one_hot(indices=x, depth=5, axis=0, dtype=flow.int32)

    @flow.global_function()
    def smooth(x: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
        # OneFlow-Benchmark's label_smoothing: on = 1 - eps + eps / classes, off = eps / classes
        return flow.one_hot(x, depth=4, on_value=1 - 0.1 + 0.1 / 4, off_value=0.1 / 4, dtype=flow.float32)

    np.testing.assert_array_equal(onehot_Job(np.array([0, 3, 1, 2], np.int32)), [
        [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0], [0, 0, 0, 0]])

    np.testing.assert_allclose(smooth(np.array([3, 0, 1], np.int32)),
                               _np_one_hot(np.array([3, 0, 1]), 4, 0.925, 0.025, -1), rtol=1e-7)


@pytest.mark.parametrize("impl", IMPLS)
def test_one_hot_kernels_and_out_of_range_indices(impl):
    x = RNG.integers(0, 7, (5, 2)).astype(np.int64)
    attrs = {"depth": 7, "floating_on_value": 0.5, "integer_on_value": 0, "floating_off_value": -2.0,
             "integer_off_value": 0, "dtype": flow.float64}
    (out,) = run_op("one_hot", {"indices": [x]}, attrs, impl)
    np.testing.assert_array_equal(out, _np_one_hot(x, 7, 0.5, -2.0, -1))
    x[3, 1] = 7
    with pytest.raises(IndexError, match=r"index 7 \(at flat position 7 of shape \(5, 2\)\) is out of range \[0, 7\)"):
        run_op("one_hot", {"indices": [x]}, attrs, impl)


def test_one_hot_bad_input_is_an_error_at_the_users_line():
    flow.clear_default_session()

    @flow.global_function()
    def no_dtype(x: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
        return flow.one_hot(x, depth=4)

    with pytest.raises(OpInferError, match=r"test_zoo_ops.py:\d+: one_hot needs dtype="):
        no_dtype(np.zeros(3, np.int32))
    flow.clear_default_session()

    @flow.global_function()
    def float_ids(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.one_hot(x, depth=4, dtype=flow.float32)

    with pytest.raises(OpInferError, match="input 'indices' has dtype float32; one_hot accepts int8, int32"):
        float_ids(np.zeros(3, np.float32))
    flow.clear_default_session()

    @flow.global_function()
    def bad_index(x: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
        return flow.one_hot(x, depth=4, dtype=flow.float32)

    with pytest.raises(KernelError, match=r"index 4 .* out of range \[0, 4\)"):
        bad_index(np.array([0, 4, 1], np.int32))


# -- 2 devices ------------------------------------------------------------------------------------------------
def _one_and_two_devices(make, *arrays: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    """The job ``make()`` defines, run on 1 and on 2 CPU devices (inputs split on axis 0), and the 2-device
    job's SBP signatures."""
    results = []
    for devices in (1, 2):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)
        job = make()
        results.append(job(*arrays))
        sigs = flow.default_session().job_set.job(job.__name__).sbp_signatures
    flow.clear_default_session()
    flow.config.cpu_device_num(1)
    return results[0], results[1], sigs


def _sig_of(sigs: dict, prefix: str) -> str:
    return next(str(s) for name, s in sigs.items() if name.startswith(prefix))


def test_one_hot_split_on_two_devices_equals_one_device():
    def make():
        @flow.global_function()
        def one_hot_2(x: tp.Numpy.Placeholder((6, 2), dtype=flow.int32)) -> tp.Numpy:
            return flow.one_hot(x, depth=5, dtype=flow.float32)

        return one_hot_2

    one, two, sigs = _one_and_two_devices(make, RNG.integers(0, 5, (6, 2)).astype(np.int32))
    np.testing.assert_array_equal(one, two)
    assert _sig_of(sigs, "one_hot") == "{indices_0: S(0), out_0: S(0)}"


# -- gather(batch_dims=) --------------------------------------------------------------------------------------
def _np_batch_gather(params: np.ndarray, ids: np.ndarray) -> np.ndarray:
    k = ids.ndim - 1  # gathers along axis k within each of the leading k axes' entries
    idx = ids.reshape(ids.shape + (1,) * (params.ndim - ids.ndim))
    return np.take_along_axis(params, np.broadcast_to(idx, ids.shape + params.shape[k + 1:]), axis=k)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("params_shape, ids_shape", [((3, 6, 4), (3, 2)), ((2, 3, 5, 2), (2, 3, 4)),
                                                     ((4, 5), (4, 7))])
def test_batch_gather_kernels_and_their_adjoint(impl, params_shape, ids_shape):
    params = RNG.standard_normal(params_shape)
    ids = RNG.integers(0, params_shape[len(ids_shape) - 1], ids_shape).astype(np.int32)
    (out,) = run_op("batch_gather", {"in": [params], "indices": [ids]}, {}, impl)
    np.testing.assert_array_equal(out, _np_batch_gather(params, ids))
    dy = RNG.standard_normal(out.shape)
    (dx,) = run_op("unsorted_batch_segment_sum", {"data": [dy], "segment_ids": [ids]},
                   {"num_segments": params_shape[len(ids_shape) - 1]}, impl)
    assert np.sum(out * dy) == pytest.approx(np.sum(params * dx))  # <gather(p), dy> = <p, scatter(dy)>
    ids.flat[-1] = -1
    with pytest.raises(IndexError, match=r"index -1 .* is out of range"):
        run_op("batch_gather", {"in": [params], "indices": [ids]}, {}, impl)


def test_gather_batch_dims_as_bert_calls_it_and_its_gradient():
    """BERT's _GatherIndexes: flow.gather(params=seq, indices=positions, axis=2, batch_dims=2) with positions of
    rank 2 gathers the positions of each sequence (OneFlow's batch_gather works on indices.ndim - 1)."""
    seq, pos = v(2, 5, 3), RNG.integers(0, 5, (2, 4)).astype(np.int32)

    def build(b, f):
        return flow.gather(params=b["seq"], indices=f["pos"], axis=2, batch_dims=2)

    def forward(s, f):
        return _np_batch_gather(s["seq"], f["pos"])

    check({"seq": seq}, build, forward, {"pos": pos}, (2, 4, 3))


def test_gather_batch_dims_errors():
    flow.clear_default_session()

    @flow.global_function()
    def above(x: tp.Numpy.Placeholder((2, 5, 3)), i: tp.Numpy.Placeholder((2, 4), dtype=flow.int32)) -> tp.Numpy:
        return flow.gather(x, i, axis=2, batch_dims=1)

    with pytest.raises(NotImplementedError, match=r"test_zoo_ops.py:\d+: gather with batch_dims=1 and axis=2"):
        above(np.zeros((2, 5, 3), np.float32), np.zeros((2, 4), np.int32))
    flow.clear_default_session()

    @flow.global_function()
    def mismatch(x: tp.Numpy.Placeholder((2, 5, 3)), i: tp.Numpy.Placeholder((3, 4), dtype=flow.int32)
                 ) -> tp.Numpy:
        return flow.gather(x, i, batch_dims=1)

    with pytest.raises(OpInferError, match=r"the batch axes of indices i32\[3,4\] \(all but its last\) must equal"):
        mismatch(np.zeros((2, 5, 3), np.float32), np.zeros((3, 4), np.int32))


def test_batch_gather_split_on_two_devices_equals_one_device():
    def make():
        @flow.global_function()
        def batch_gather_2(x: tp.Numpy.Placeholder((4, 5, 3)), i: tp.Numpy.Placeholder((4, 2), dtype=flow.int32)
                           ) -> tp.Numpy:
            return flow.gather(x, i, axis=1, batch_dims=1)

        return batch_gather_2

    params, pos = RNG.standard_normal((4, 5, 3)).astype(np.float32), RNG.integers(0, 5, (4, 2)).astype(np.int32)
    one, two, sigs = _one_and_two_devices(make, params, pos)
    np.testing.assert_array_equal(one, _np_batch_gather(params, pos))
    np.testing.assert_array_equal(one, two)
    assert _sig_of(sigs, "batch_gather") == "{in_0: S(0), indices_0: S(0), out_0: S(0)}"


# -- add_n, identity_n ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", [2, 5])
def test_add_n_kernels(impl, n):
    xs = [RNG.standard_normal((3, 4)).astype(np.float32) for _ in range(n)]
    (out,) = run_op("add_n", {"in": xs}, {}, impl)
    np.testing.assert_allclose(out, np.sum(np.array(xs, np.float64), 0), rtol=1e-6)
    ints = [RNG.integers(-9, 9, (5,)).astype(np.int32) for _ in range(n)]
    np.testing.assert_array_equal(run_op("add_n", {"in": ints}, {}, impl)[0], np.sum(ints, 0))


def test_add_n_and_identity_n_through_a_job_with_gradients():
    """11 blobs: OneFlow builds add_n 8 at a time (one op of the first 8, a second of the rest and that sum)."""
    xs = {f"x{i}": v(2, 3) for i in range(11)}

    def build(b, f):
        parts = flow.identity_n([b[f"x{i}"] for i in range(11)])
        return flow.math.add_n([p * float(i + 1) for i, p in enumerate(parts)])

    def forward(s, f):
        return sum(s[f"x{i}"] * (i + 1) for i in range(11))

    check(xs, build, forward, {}, (2, 3))
    job = flow.default_session().job_set.job("grad_job")
    add_ns = [op for op in job.ops if op.op_type == "add_n"]
    assert sorted(len(op.inputs["in"]) for op in add_ns) == [4, 8]
    assert [len(op.inputs["in"]) for op in job.ops if op.op_type == "tuple_identity"] == [11]


def test_identity_n_gives_each_output_its_inputs_sbp_and_ignores_input_hints():
    """tuple_identity_op.cpp: in_i and out_i lie as in_i's producer lays it (S(0), S(1), B side by side), and a
    with_distribute on an input does not constrain it (test_boxing_v2's multi_lbi case failed on that before)."""
    def make():
        @flow.global_function()
        def identity_n_2(x: tp.Numpy.Placeholder((4, 6))) -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy]:
            s0 = flow.identity(x.with_distribute(flow.distribute.split(0)))
            s1 = flow.identity(x.with_distribute(flow.distribute.split(1)))
            b = flow.identity(x.with_distribute(flow.distribute.broadcast()))
            return tuple(flow.identity_n([s0, s1.with_distribute(flow.distribute.broadcast()), b]))

        return identity_n_2

    x = RNG.standard_normal((4, 6)).astype(np.float32)
    one, two, sigs = _one_and_two_devices(make, x)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, x)
        np.testing.assert_array_equal(b, x)
    assert _sig_of(sigs, "tuple_identity") == ("{in_0: S(0), out_0: S(0), in_1: S(1), out_1: S(1), in_2: B, "
                                               "out_2: B}")


def test_add_n_docstring_example_one_blob_and_errors():
    flow.clear_default_session()

    @flow.global_function()
    def add_n_Job(x: tp.Numpy.Placeholder((3,)), y: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.math.add_n([x, y])

    @flow.global_function()
    def one(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.math.add_n([x])

    np.testing.assert_array_equal(add_n_Job(np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)),
                                  [5, 7, 9])
    np.testing.assert_array_equal(one(np.array([1, 2, 3], np.float32)), [1, 2, 3])
    flow.clear_default_session()

    @flow.global_function()
    def bad(x: tp.Numpy.Placeholder((3,)), y: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return flow.math.add_n([x, y])

    with pytest.raises(OpInferError, match=r"add_n's inputs must all have the shape and dtype of input 0 "
                                           r"\(f32\[3\]\); input 1 is f32\[2\]"):
        bad(np.zeros(3, np.float32), np.zeros(2, np.float32))
    flow.clear_default_session()

    @flow.global_function()
    def not_a_list(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.identity_n(x)

    with pytest.raises(OpInferError, match=r"test_zoo_ops.py:\d+: identity_n takes a non-empty list of blobs"):
        not_a_list(np.zeros(3, np.float32))


def test_identity_n_docstring_example():
    flow.clear_default_session()

    @flow.global_function()
    def identity_Job(x: tp.Numpy.Placeholder((1, 3), dtype=flow.int32),
                     y: tp.Numpy.Placeholder((1, 3), dtype=flow.int32),
                     z: tp.Numpy.Placeholder((1, 3), dtype=flow.int32)) -> list[tp.Numpy]:
        return flow.identity_n([x, y, z])

    out = identity_Job(*(np.full((1, 3), i, np.int32) for i in (1, 2, 3)))
    assert [o.tolist() for o in out] == [[[1, 1, 1]], [[2, 2, 2]], [[3, 3, 3]]]


def test_add_n_split_on_two_devices_equals_one_device():
    def make():
        @flow.global_function()
        def add_n_2(a: tp.Numpy.Placeholder((4, 3)), b: tp.Numpy.Placeholder((4, 3)),
                    c: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
            return flow.math.add_n([a, b, c])

        return add_n_2

    xs = [RNG.standard_normal((4, 3)).astype(np.float32) for _ in range(3)]
    one, two, sigs = _one_and_two_devices(make, *xs)
    np.testing.assert_array_equal(one, two)
    assert _sig_of(sigs, "add_n") == "{in_0: S(0), in_1: S(0), in_2: S(0), out_0: S(0)}"


# -- pad ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", IMPLS)
def test_pad_kernels(impl):
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    attrs = {"padding_before": (1, 0, 2), "padding_after": (0, 2, 1), "floating_constant_value": -1.5,
             "integral_constant_value": 0}
    (y,) = run_op("pad", {"x": [x]}, attrs, impl)
    np.testing.assert_array_equal(y, np.pad(x, ((1, 0), (0, 2), (2, 1)), constant_values=-1.5))
    (dx,) = run_op("pad_grad", {"dy": [y]}, attrs, impl)
    np.testing.assert_array_equal(dx, x)
    xi = RNG.integers(-5, 5, (3, 2)).astype(np.int32)
    iattrs = {**attrs, "padding_before": (0, 1), "padding_after": (2, 0), "integral_constant_value": 7}
    np.testing.assert_array_equal(run_op("pad", {"x": [xi]}, iattrs, impl)[0],
                                  np.pad(xi, ((0, 2), (1, 0)), constant_values=7))


def test_pad_docstring_example_integers_and_gradient():
    flow.clear_default_session()

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((3, 3))) -> tp.Numpy:
        return flow.pad(x, paddings=((2, 2), (1, 1)), constant_value=5)

    @flow.global_function()
    def pad_int(x: tp.Numpy.Placeholder((2, 2), dtype=flow.int32)) -> tp.Numpy:
        return flow.pad(x, paddings=[(0, 1), (1, 0)], constant_value=2.7)  # OneFlow's integral attr: int(2.7)

    out = pad_Job(np.ones((3, 3), np.float32))
    np.testing.assert_array_equal(out, np.pad(np.ones((3, 3)), ((2, 2), (1, 1)), constant_values=5))
    assert out.shape == (7, 5)
    np.testing.assert_array_equal(pad_int(np.ones((2, 2), np.int32)), [[2, 1, 1], [2, 1, 1], [2, 2, 2]])
    flow.clear_default_session()

    def build(b, f):
        return flow.pad(b["x"], [(1, 0), (0, 2), (3, 1)], constant_value=0.5)

    def forward(s, f):
        return np.pad(s["x"], ((1, 0), (0, 2), (3, 1)), constant_values=0.5)

    check({"x": v(2, 2, 3)}, build, forward, {}, (3, 4, 7))


def test_pad_errors():
    flow.clear_default_session()

    @flow.global_function()
    def short(x: tp.Numpy.Placeholder((3, 3))) -> tp.Numpy:
        return flow.pad(x, paddings=((1, 1),))

    with pytest.raises(OpInferError, match=r"test_zoo_ops.py:\d+: pad: paddings needs one \(before, after\) pair "
                                           r"per axis of f32\[3,3\]; got 1"):
        short(np.zeros((3, 3), np.float32))
    flow.clear_default_session()

    @flow.global_function()
    def negative(x: tp.Numpy.Placeholder((3, 3))) -> tp.Numpy:
        return flow.pad(x, paddings=((1, 1), (0, -1)))

    with pytest.raises(OpInferError, match=r"paddings must be non-negative"):
        negative(np.zeros((3, 3), np.float32))


def test_pad_split_on_an_unpadded_axis_on_two_devices_equals_one_device():
    def make():
        @flow.global_function()
        def pad_2(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
            return flow.pad(x, [(0, 0), (1, 2)], constant_value=3.0)

        return pad_2

    x = RNG.standard_normal((4, 3)).astype(np.float32)
    one, two, sigs = _one_and_two_devices(make, x)
    np.testing.assert_array_equal(one, np.pad(x, ((0, 0), (1, 2)), constant_values=3.0))
    np.testing.assert_array_equal(one, two)
    assert _sig_of(sigs, "pad") == "{x_0: S(0), y_0: S(0)}"
