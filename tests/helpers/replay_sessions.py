"""A training session for the replay layer's tests: its shapes and how many calls."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp

B, D, H = 8, 12, 6


CALLS = 30  # more than the 25 calls the wait-ids source's 100 registers take to come round (4 sections a call)


def train_session(watched: list[np.ndarray]) -> tuple[object, object]:
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((B, D)),
                  y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, H, activation=flow.nn.relu, kernel_initializer=flow.truncated_normal(0.1),
                              name="hidden")
        logits = flow.layers.dense(h, 3, kernel_initializer=flow.truncated_normal(0.1), name="output")
        flow.watch_diff(logits, lambda g: watched.append(g))
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([5], [0.1, 0.05]), momentum=0.9).minimize(loss)
        return loss

    @flow.global_function()
    def eval_job(x: tp.Numpy.Placeholder((B, D))) -> tp.Numpy:
        h = flow.layers.dense(x, H, activation=flow.nn.relu, name="hidden")
        return flow.layers.dense(h, 3, name="output")

    return train_job, eval_job
