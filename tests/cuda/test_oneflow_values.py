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
