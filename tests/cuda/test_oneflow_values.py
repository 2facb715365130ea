"""The CUDA kernels of issue 23's wrong values, against NumPy float64 (the CPU twins: tests/ops/test_xent_oneflow.py,
tests/ops/test_reduce_accuracy.py)."""

from __future__ import annotations

import numpy as np
import pytest

from flowlab.kernels.numba_cuda import launch_config

from .helpers import run

RNG = np.random.default_rng(230)


@pytest.mark.parametrize("max_blocks", [64, 2])
def test_softmax_xent_grad_is_prob_minus_labels_with_unnormalised_labels(max_blocks):
    # OneFlow's ComputeDiffWithSoftmax: dy * (prob - labels) whatever each row of labels sums to
    logits = RNG.standard_normal((5, 37))
    prob = np.exp(logits - logits.max(1, keepdims=True))
    prob /= prob.sum(1, keepdims=True)
    labels, dy = RNG.random((5, 37)) * 2, RNG.standard_normal(5)
    labels[1] = 0.0
    with launch_config(threads=16, max_blocks=max_blocks):
        (dx,) = run("softmax_cross_entropy_grad", {"prob": [prob], "label": [labels], "dy": [dy]}, {}, "gpu")
    np.testing.assert_allclose(dx, dy[:, None] * (prob - labels), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("label_dtype", [np.int32, np.int8])
def test_sigmoid_xent_takes_integer_labels(label_dtype):
    x = (RNG.standard_normal((7, 9)) * 3).astype(np.float32)
    z = RNG.integers(0, 2, (7, 9)).astype(label_dtype)
    dy = RNG.standard_normal((7, 9)).astype(np.float32)
    with launch_config(threads=16):
        (loss,) = run("sigmoid_cross_entropy", {"prediction": [x], "label": [z]}, {}, "gpu")
        (dx,) = run("sigmoid_cross_entropy_grad", {"prediction": [x], "label": [z], "dy": [dy]}, {}, "gpu")
    x64, z64 = x.astype(np.float64), z.astype(np.float64)
    s = 1 / (1 + np.exp(-x64))
    assert loss.dtype == dx.dtype == np.float32
    np.testing.assert_allclose(loss, -(z64 * np.log(s) + (1 - z64) * np.log(1 - s)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, (s - z64) * dy, rtol=1e-5, atol=1e-6)


def test_learning_rate_schedule_matches_oneflow_at_every_step():
    import itertools

    from ..ops.oneflow_lr import DECAYS, STEPS, WARMUPS, oneflow_lr

    for decay, warmup in itertools.product(DECAYS, WARMUPS):
        attrs = {"learning_rate": 0.1, "decay": decay, "warmup": warmup}
        for step in STEPS:
            (lr,) = run("learning_rate_schedule", {"train_step": [np.array([step], np.int64)]}, attrs, "gpu")
            want = oneflow_lr(0.1, step, decay, warmup)
            assert abs(int(lr.view(np.int32)[0]) - int(np.array([want]).view(np.int32)[0])) <= 1, \
                (decay, warmup, step, lr[0], want)  # within one float32 ulp


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean"])
@pytest.mark.parametrize("shape, axis", [((3, 4096), (1,)), ((4096, 3), (0,)), ((2, 2048, 2), (1,)),
                                         ((64, 64), None)])
def test_float32_sums_keep_small_terms_after_a_large_one(op, shape, axis):
    # 1e-8 added to 1.0 in float32 is lost: a float32 accumulator would return about 1.0 here (4e-5 off); the CUDA
    # kernels accumulate in float64 (the CPU tiers: tests/ops/test_reduce_accuracy.py at 2^20 elements)
    x = np.full(shape, 1e-8, np.float32)
    x.reshape(-1)[:: max(1, x.size // 4)] = 1.0  # a few large terms, the rest tiny
    with launch_config(threads=64, max_blocks=4):
        (y,) = run(op, {"input_tensor": [x]}, {"axis": axis, "keepdims": False}, "gpu")
    want = x.astype(np.float64).sum(axis=axis)
    if op == "reduce_mean":
        want = want / (x.size / np.size(want))
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("like", [(3,), (1, 3)])
def test_reduce_sum_like_accumulates_in_float64(like):
    x = np.full((4096, 3), 1e-8, np.float32)
    x[0] = 1.0
    with launch_config(threads=64, max_blocks=4):
        (y,) = run("reduce_sum_like", {"x": [x], "like": [np.zeros(like, np.float32)]}, {}, "gpu")
    np.testing.assert_allclose(y.reshape(-1), x.astype(np.float64).sum(0), rtol=1e-6, atol=0)
