"""Jobs on several devices for SBP tests: an MLP trained data parallel, a job set's compiled form, a signature's
text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import flowlab as flow
import flowlab.typing as tp
from flowlab.ir import JobSet


def job_set_of(call: Callable[[], Any]) -> JobSet:
    call()
    return flow.default_session().job_set


def sig(job: Any, op_name: str) -> dict[str, str]:
    return {bn: str(s) for bn, s in job.sbp_signatures[op_name].bn_in_op2sbp_parallel.items()}


def mlp_train(model_distribute: Any = None) -> JobSet:
    """The MLP of the docs' distributed_train.py / mixed_parallel_mlp.py, 2 devices, SGD with momentum."""
    flow.config.cpu_device_num(2)

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((8, 1, 4, 4)),
                  labels: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
        reshape = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(reshape, 6, activation=flow.nn.relu, name="dense1")
        logits = flow.layers.dense(hidden, 4, name="dense2", model_distribute=model_distribute)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    return job_set_of(lambda: train_job(np.zeros((8, 1, 4, 4), np.float32), np.zeros((8,), np.int32)))
