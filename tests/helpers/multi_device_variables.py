"""Training jobs with variables on several devices (mixed placements), and their batches."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp

BATCH, FEATURES = 6, 10


def define_mixed(devices: str):
    """OneFlow's mixed_parallel_mlp: dense1 data parallel, dense2 with its weight split on axis 0 (columns)."""

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((BATCH, FEATURES)),
                  y: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", devices):
            hidden = flow.layers.dense(x, 8, activation=flow.nn.relu, kernel_initializer=flow.truncated_normal(0.1),
                                       name="dense1")
            logits = flow.layers.dense(hidden, 4, kernel_initializer=flow.truncated_normal(0.1), name="dense2",
                                       model_distribute=flow.distribute.split(0))
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    return train_job


def batches(n: int = 4):
    rng = np.random.default_rng(3)
    return [(rng.standard_normal((BATCH, FEATURES)).astype(np.float32),
             rng.integers(0, 4, BATCH).astype(np.int32)) for _ in range(n)]


def train(devices: str, cpu_device_num: int):
    flow.clear_default_session()
    flow.config.cpu_device_num(cpu_device_num)
    job = define_mixed(devices)
    return [job(x, y) for x, y in batches()], flow.get_all_variables(), job
