"""A wide MLP for the replay proofs of fused kernels."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import flowlab as flow
import flowlab.typing as tp

B, D, H, C = 16, 24, 80, 10


def build_wide_mlp(watched: list[np.ndarray]) -> Callable[[int], list[np.ndarray]]:
    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        init = flow.truncated_normal(0.1)
        h = flow.layers.dense(x, H, activation=flow.nn.relu, kernel_initializer=init, name="hidden")
        logits = flow.layers.dense(h, C, kernel_initializer=init, name="output")
        flow.watch_diff(logits, watched.append)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    def call(k: int) -> list[np.ndarray]:
        rng = np.random.default_rng(2000 + k)
        x = rng.standard_normal((B, D)).astype(np.float32)
        return [train_job(x, rng.integers(0, C, B).astype(np.int32))]

    return call
