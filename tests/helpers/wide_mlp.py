"""A wide MLP, and a dense block with batch norm and a residual add, for the replay proofs of fused kernels."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import flowlab as flow
import flowlab.typing as tp

B, D, H, C = 16, 24, 80, 10


def _trained(body: Callable[[object], object], watched: list[np.ndarray], seed: int
             ) -> Callable[[int], list[np.ndarray]]:
    """A train job: ``body(x)`` -> the hidden blob, then a dense output layer, softmax cross entropy and SGD with
    momentum; each call k feeds its own random batch."""
    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        logits = flow.layers.dense(body(x), C, kernel_initializer=flow.truncated_normal(0.1), name="output")
        flow.watch_diff(logits, watched.append)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    def call(k: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed + k)
        x = rng.standard_normal((B, D)).astype(np.float32)
        return [train_job(x, rng.integers(0, C, B).astype(np.int32))]

    return call


def build_wide_mlp(watched: list[np.ndarray]) -> Callable[[int], list[np.ndarray]]:
    return _trained(lambda x: flow.layers.dense(x, H, activation=flow.nn.relu,
                                                kernel_initializer=flow.truncated_normal(0.1), name="hidden"),
                    watched, 2000)


def build_residual_bn(watched: list[np.ndarray]) -> Callable[[int], list[np.ndarray]]:
    """dense -> batch norm (training) -> + the input (broadcast_add of two blobs of one shape) -> relu."""
    def block(x):
        h = flow.layers.dense(x, D, kernel_initializer=flow.truncated_normal(0.1), name="block")
        h = flow.layers.batch_normalization(h, axis=1, training=True, name="block_bn")
        return flow.nn.relu(h + x)

    return _trained(block, watched, 3000)
