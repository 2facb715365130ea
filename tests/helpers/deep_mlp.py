"""The issue-10 model: a 30-layer MLP train job (754 tasks in 8 jobs) that once took minutes to draw."""

from __future__ import annotations

from typing import Any

import flowlab as flow

DEEP_MLP = """
import numpy as np
import flowlab as flow
import flowlab.typing as tp

@flow.global_function(type="train")
def deep_train(x: tp.Numpy.Placeholder((50, 64)), y: tp.Numpy.Placeholder((50,), dtype=flow.int32)) -> tp.Numpy:
    h = x
    for i in range(30):
        h = flow.layers.dense(h, 64, activation=flow.nn.relu, name=f"fc{i}")
    logits = flow.layers.dense(h, 10, name="out")
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits, name="loss")
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.01]), momentum=0).minimize(loss)
    return loss
"""
DEEP_MLP_CALL = "deep_train(np.zeros((50, 64), np.float32), np.zeros(50, np.int32))\n"


def build_deep_mlp() -> Any:
    """Compile (not run) the 30-layer MLP train job in a fresh default session; returns the session."""
    flow.clear_default_session()
    namespace: dict[str, Any] = {}
    exec(compile(DEEP_MLP, "deep_mlp.py", "exec"), namespace)
    session = flow.default_session()
    session.try_init()
    return session
