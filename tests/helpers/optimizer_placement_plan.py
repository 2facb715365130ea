"""The split-update model of the optimizer placement plan tests."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp
from tests.helpers.optimizer_placement import B, C, D, H, batches
from tests.helpers.replay_models import Call


def build_split(watched: list[np.ndarray]) -> Call:
    """A replay-proof model: the distributed_split MLP on the configured devices, its logits' gradient watched."""
    cfg = flow.FunctionConfig()
    cfg.optimizer_placement_optimization_mode("distributed_split")
    cfg.optimizer_placement_optimization_threshold(1)

    @flow.global_function(type="train", function_config=cfg)
    def train_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, H, activation=flow.nn.relu, name="hidden")
        logits = flow.layers.dense(h, C, name="output")
        flow.watch_diff(logits, watched.append)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    data = batches()
    return lambda k: [train_job(*data[k % len(data)])]
