"""slice_v2 with negative steps (OneFlow's slice_v2 slices backwards, as a Python slice): the CPU kernels of both
modes and the CUDA kernel (the simulator in CI) against NumPy's slicing, forward and gradient, a job with the
gradient through watch_diff, and a zero step refused. A backward slice to the front is the case where
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
