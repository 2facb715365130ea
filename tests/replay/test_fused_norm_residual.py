"""The replay proof for batch norm, its gradient and the residual add: they have fused forms, so a ResNet block's
kernels are one run of fused calls instead of a run broken at each of them (docs/performance.md, "Compiling a big
Plan's segments": a 2-device ResNet-50 compiled 370 small segments). Fused, every call and every memory block must
be the protocol's bit for bit, the moving mean and variance (updated in place) included."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.kernels.numba_cpu import math as numba_math
from flowlab.kernels.numba_cpu import norm
from flowlab.replay.fused import Segment, fused_call_of
from tests.helpers.replay_proof import CALLS, assert_replayed_and_fused, assert_same, run

B, D, C = 16, 24, 10


def build_residual_bn(watched: list[np.ndarray]) -> Callable[[int], list[np.ndarray]]:
    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        init = flow.truncated_normal(0.1)
        h = flow.layers.dense(x, D, kernel_initializer=init, name="block")
        h = flow.layers.batch_normalization(h, axis=1, training=True, name="block_bn")
        h = flow.nn.relu(h + x)  # the residual add: broadcast_add of two blobs of one shape
        logits = flow.layers.dense(h, C, kernel_initializer=init, name="output")
        flow.watch_diff(logits, watched.append)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    def call(k: int) -> list[np.ndarray]:
        rng = np.random.default_rng(3000 + k)
        x = rng.standard_normal((B, D)).astype(np.float32)
        return [train_job(x, rng.integers(0, C, B).astype(np.int32))]

    return call


def test_batch_norm_and_the_residual_add_fuse_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "0")
    protocol = run(build_residual_bn, False, CALLS, monkeypatch)
    replayed = run(build_residual_bn, True, CALLS, monkeypatch)
    assert_replayed_and_fused(replayed, "train")
    segments = [step for schedule in replayed["layer"].schedules.values() for step in schedule.fused or ()
                if isinstance(step, Segment) and any("train" in name for name in schedule.key)]
    kernels = {fused_call_of(actor, step).fn for segment in segments
               for actor, step in zip(segment.actors, segment.steps)}
    assert {norm._norm, norm._norm_grad, numba_math._add} <= kernels, kernels
    assert_same(protocol, replayed)
