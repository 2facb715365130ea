"""Jobs placed on a GPU and their data, for the GPU plan and stream tests."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp

B, D, H, C = 4, 6, 5, 3


RNG = np.random.default_rng(0)


XS = [RNG.random((B, D)).astype(np.float32) for _ in range(3)]


YS = [RNG.integers(0, C, B).astype(np.int32) for _ in range(3)]


def pad_job():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("gpu", "0:0"):
            return flow.reflection_pad2d(x, padding=1)

    return pad_Job


def mlp_job(device: str):
    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement(device, "0:0"):
            init = flow.random_normal_initializer(stddev=0.3)
            hidden = flow.layers.dense(x, H, activation=flow.nn.relu, name="hidden", kernel_initializer=init)
            logits = flow.layers.dense(hidden, C, name="output", kernel_initializer=init)
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits, name="loss")
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0.9).minimize(loss)
        return loss

    return train_job
