"""flow.math.two_stage_reduce_max / _min (OneFlow v0.3.4's two_stage_reduce.py and two_stage_reduce_ops.cpp):
the device and global stages' kernels (both CPU implementations) against NumPy float64 with ties, the function
through a job on 2 and 3 devices (the per-device ops, values and the tie-sharing gradient), gradients against finite
differences, and the errors. The CUDA kernels: tests/cuda/test_kernels.py, from op_samples.py."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError
from tests.helpers.gradients import check, v

from .helpers import run_op

RNG = np.random.default_rng(31)
IMPLS = ["reference", "numba"]
KINDS = [("reduce_max", np.max), ("reduce_min", np.min)]


def _ties(shape=(3, 4, 5)) -> np.ndarray:
    return RNG.integers(0, 3, shape).astype(np.float64)  # many ties


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind, np_fn", KINDS)
@pytest.mark.parametrize("axis", [(1,), (0, 2), (0, 1, 2)])
def test_device_and_global_stage_kernels(impl, kind, np_fn, axis):
    x = _ties()
    out, mask, count = run_op(f"{kind}_device_stage", {"in": [x]}, {"axis": axis}, impl)
    want = np_fn(x, axis=axis, keepdims=True)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(mask, (x == want).astype(np.int8))
    np.testing.assert_array_equal(count, (x == want).sum(axis=axis, keepdims=True))
    device_count = RNG.integers(1, 4, x.shape).astype(np.int32)
    out, gmask = run_op(f"{kind}_global_stage", {"in": [x], "device_count": [device_count]},
                        {"axis": axis, "keepdims": False}, impl)
    np.testing.assert_array_equal(out, np_fn(x, axis=axis).reshape(out.shape))
    np.testing.assert_array_equal(gmask, mask)
    # gradients: dy shared by the elements equal to the result (weighted by device_count in the global stage)
    dy = RNG.standard_normal(want.shape)
    (dx,) = run_op(f"{kind}_device_stage_grad", {"out_diff": [dy], "mask": [mask], "count": [count]},
                   {"axis": axis}, impl)
    np.testing.assert_allclose(dx, mask * dy / count, rtol=1e-15)
    (dx,) = run_op(f"{kind}_global_stage_grad", {"out_diff": [dy.reshape(out.shape)], "mask": [mask],
                                                 "device_count": [device_count]},
                   {"axis": axis, "keepdims": False}, impl)
    weight = mask * device_count
    np.testing.assert_allclose(dx, dy * weight / weight.sum(axis=axis, keepdims=True), rtol=1e-15)


def _job(kind: str, shape, axis, split_axis, devices: int, keepdims: bool, store: dict):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def two_stage(x: tp.Numpy.Placeholder(shape, dtype=flow.float64)) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            x += flow.get_variable("v1", shape=(1,), dtype=flow.float64, initializer=flow.zeros_initializer())
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            fn = getattr(flow.math, f"two_stage_{kind}")
            y = flow.identity(fn(x.with_distribute(flow.distribute.split(split_axis)), axis=axis,
                                 keepdims=keepdims))
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(y)
            flow.watch_diff(x, lambda d: store.setdefault("dx", d.numpy()))
            return y

    return two_stage


@pytest.mark.parametrize("kind, np_fn", KINDS)
@pytest.mark.parametrize("devices, axis, split_axis, keepdims", [(2, [1], 1, True), (3, [1, 2], 2, False),
                                                                 (2, None, 0, False)])
def test_two_stage_reduce_through_a_job(kind, np_fn, devices, axis, split_axis, keepdims):
    store: dict = {}
    x = _ties((4, 6, 3))
    y = _job(kind, x.shape, axis, split_axis, devices, keepdims, store)(x)
    axes = tuple(range(3)) if axis is None else tuple(axis)
    want = np_fn(x, axis=axes, keepdims=True)
    np.testing.assert_array_equal(y, want if keepdims else want.reshape(y.shape))
    mask = x == want
    count = mask.sum(axis=axes, keepdims=True)
    # OneFlow's test's x_diff: the loss's ones shared by the ties (the mean's scale is the update's, not x_diff's)
    np.testing.assert_allclose(store["dx"], np.where(mask, 1 / count, 0), rtol=1e-14)
    job = flow.default_session().job_set.job("two_stage")
    stages = [op for op in job.ops if op.op_type == f"{kind}_device_stage"]
    assert [op.parallel_conf.device_names for op in stages] == [(f"0:{i}",) for i in range(devices)]
    flow.config.cpu_device_num(1)


@pytest.mark.parametrize("kind", ["reduce_max", "reduce_min"])
def test_gradient_against_finite_differences(kind):
    """No ties (random floats): the gradient of the extremum is the indicator of its element."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    fn = getattr(flow.math, f"two_stage_{kind}")

    def build(b, f):
        with flow.scope.placement("cpu", "0:0-1"):
            return fn(b["w"].with_distribute(flow.distribute.split(1)), axis=[1, 2], keepdims=False)

    check({"w": v(3, 4, 2)}, build, lambda s, f: getattr(np, kind[7:])(s["w"], axis=(1, 2)), {}, (3,))
    flow.config.cpu_device_num(1)


def test_errors_name_the_split_and_the_axis():
    flow.clear_default_session()

    @flow.global_function()
    def unsplit(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        return flow.math.two_stage_reduce_max(x, axis=[1])

    with pytest.raises(OpInferError, match=r"test_two_stage_ops.py:\d+: two_stage_reduce_max needs its input split "
                                           r"on a reduced axis \[1\]"):
        unsplit(np.zeros((4, 6), np.float32))
    flow.clear_default_session()

    @flow.global_function()
    def bad_axis(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        return flow.math.two_stage_reduce_min(x.with_distribute(flow.distribute.split(1)), axis=[2])

    with pytest.raises(OpInferError, match=r"two_stage_reduce: invalid axis \[2\] for a rank-2 blob"):
        bad_axis(np.zeros((4, 6), np.float32))
