"""Small train jobs whose captured Schedules the Schedule view draws: a one-device MLP called until its schedule
is fused (one fused segment), and the same on two devices (data parallel: two lanes)."""

from __future__ import annotations

from typing import Any

import numpy as np

import flowlab as flow
import flowlab.typing as tp

B, D = 4, 6


def mlp(devices: int = 1) -> Any:
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            h = flow.layers.dense(x, 5, activation=flow.nn.relu, name="hidden")
            logits = flow.layers.dense(h, 3, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
        return loss

    return train_job


def called(devices: int, times: int) -> Any:
    """A fresh default session's MLP on ``devices`` devices, called ``times`` times (segments compiled in the call,
    so that a schedule replayed FUSE_AFTER times is fused when the calls return)."""
    flow.clear_default_session()
    x, y = np.ones((B, D), np.float32), np.arange(B, dtype=np.int32) % 3
    with flow.flags(fuse_background=False):
        job = mlp(devices)
        for _ in range(times):
            job(x, y)
    return job
