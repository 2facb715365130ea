"""A data-parallel training job whose Plan the multi-device views draw."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp


def _dp_train(devices: int = 2):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def dp(x: tp.Numpy.Placeholder((16, 8))) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            h = flow.layers.dense(x, 4, name="fc1")
            loss = flow.math.reduce_mean(h)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
            return loss

    dp(np.ones((16, 8), np.float32))
    return flow.default_session()
