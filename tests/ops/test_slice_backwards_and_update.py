"""slice_v2 with negative steps (OneFlow's slice_v2 slices backwards, as a Python slice) and flow.slice_update: the
CPU kernels of both modes and the CUDA kernel (the simulator in CI) against NumPy, forward and gradient, train jobs
with the gradients through watch_diff, and errors. A backward slice to the front is the case where
``slice.indices()`` gives stop -1, which NumPy would read as the last element: it must not come out empty."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError

from .helpers import run_op

RNG = np.random.default_rng(41)
SPECS = [((None, None, None), (None, None, -1), (None, None, None)),
         ((None, None, None), (-1, 1, -2), (None, None, None)),
         ((1, None, -1), (3, None, -2), (None, 0, -1))]


def _index(spec):
    return tuple(slice(*s) for s in spec)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("device", ["reference", "numba", "gpu"])
def test_slice_and_its_gradient_backwards(spec, device):
    x = RNG.standard_normal((2, 5, 4))
    want = x[_index(spec)]
    dy = RNG.standard_normal(want.shape)
    want_dx = np.zeros_like(x)
    want_dx[_index(spec)] = dy
    if device == "gpu":
        from tests.cuda.helpers import run

        (y,) = run("slice", {"x": [x]}, {"slice_tup_list": spec}, "gpu")
        (dx,) = run("slice_grad", {"dy": [dy], "like": [x]}, {"slice_tup_list": spec}, "gpu")
    else:
        (y,) = run_op("slice", {"x": [x]}, {"slice_tup_list": spec}, device)
        (dx,) = run_op("slice_grad", {"dy": [dy], "like": [x]}, {"slice_tup_list": spec}, device)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(dx, want_dx)


def test_backward_slice_in_a_train_job():
    x = RNG.standard_normal((3, 6))
    w = RNG.standard_normal((3, 3))
    grads: list = []

    @flow.global_function(type="train")
    def rev(a: tp.Numpy.Placeholder((3, 6), dtype=flow.float64),
            b: tp.Numpy.Placeholder((3, 3), dtype=flow.float64)) -> tp.Numpy:
        v = flow.get_variable("v", shape=(3, 6), dtype=flow.float64, initializer=flow.zeros_initializer()) + a
        y = flow.slice_v2(v, [(None, None, None), (None, None, -2)])
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(y * b))
        flow.watch_diff(v, grads.append)
        return y

    for _ in range(2):  # both tiers
        np.testing.assert_array_equal(rev(x, w), x[:, ::-2])
    want = np.zeros((3, 6))
    want[:, ::-2] = w
    np.testing.assert_array_equal(grads[-1].numpy(), want)


def test_a_zero_step_is_refused():
    @flow.global_function()
    def zero(a: tp.Numpy.Placeholder((3, 6))) -> tp.Numpy:
        return flow.slice_v2(a, [(None, None, 0)])

    with pytest.raises(OpInferError, match="slice steps must not be 0"):
        zero(np.zeros((3, 6), np.float32))


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("device", ["reference", "numba", "gpu"])
def test_slice_update_kernels(spec, device):
    x = RNG.standard_normal((2, 5, 4))
    update = RNG.standard_normal(x[_index(spec)].shape)
    want = x.copy()
    want[_index(spec)] = update
    if device == "gpu":
        from tests.cuda.helpers import run

        (y,) = run("slice_update", {"x": [x], "update": [update]}, {"slice_tup_list": spec}, "gpu")
    else:
        (y,) = run_op("slice_update", {"x": [x], "update": [update]}, {"slice_tup_list": spec}, device)
    np.testing.assert_array_equal(y, want)


def test_slice_update_in_a_train_job_and_its_errors():
    x, u, w = RNG.standard_normal((3, 6)), RNG.standard_normal((3, 2)), RNG.standard_normal((3, 6))
    grads: dict = {}

    @flow.global_function(type="train")
    def su(a: tp.Numpy.Placeholder((3, 6), dtype=flow.float64), b: tp.Numpy.Placeholder((3, 2), dtype=flow.float64),
           c: tp.Numpy.Placeholder((3, 6), dtype=flow.float64)) -> tp.Numpy:
        v = flow.get_variable("v", shape=(3, 6), dtype=flow.float64, initializer=flow.zeros_initializer()) + a
        t = flow.get_variable("t", shape=(3, 2), dtype=flow.float64, initializer=flow.zeros_initializer()) + b
        y = flow.slice_update(v, t, [(None, None, None), (4, 0, -3)])
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(y * c))
        flow.watch_diff(v, lambda d: grads.__setitem__("v", d.numpy()))
        flow.watch_diff(t, lambda d: grads.__setitem__("t", d.numpy()))
        return y

    want = x.copy()
    want[:, 4:0:-3] = u
    np.testing.assert_array_equal(su(x, u, w), want)
    dv = w.copy()
    dv[:, 4:0:-3] = 0  # the replaced elements pass no gradient to x
    np.testing.assert_array_equal(grads["v"], dv)
    np.testing.assert_array_equal(grads["t"], w[:, 4:0:-3])

    flow.clear_default_session()

    @flow.global_function()
    def wrong(a: tp.Numpy.Placeholder((3, 6)), b: tp.Numpy.Placeholder((3, 3))) -> tp.Numpy:
        return flow.slice_update(a, b, [(None, None, None), (4, 0, -3)])

    with pytest.raises(OpInferError, match=r"update f32\[3,3\] must have the shape of the slice .* \[3, 2\]"):
        wrong(np.zeros((3, 6), np.float32), np.zeros((3, 3), np.float32))
