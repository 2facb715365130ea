"""OneFlow's documented data-parallel and mixed-parallel MLPs (oneflow-distributed.md §5), small enough that every
register stays inline in Ray's messages (< 100 KB), run for a few SGD-with-momentum steps."""

from __future__ import annotations

from typing import Any

import numpy as np

import flowlab as flow
import flowlab.typing as tp

BATCH, FEATURES, HIDDEN, CLASSES = 8, 16, 12, 4


def data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((BATCH, FEATURES)).astype(np.float32),
            rng.integers(0, CLASSES, BATCH).astype(np.int32))


def mlp_train(placement: str | list[str], model_distribute: Any = None) -> Any:
    """The docs' MLP: dense (relu) then dense, sparse softmax cross entropy, SGD with momentum 0.9."""

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
                  labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", placement):
            hidden = flow.layers.dense(images, HIDDEN, activation=flow.nn.relu, name="dense1",
                                       kernel_initializer=flow.truncated_normal(0.1))
            logits = flow.layers.dense(hidden, CLASSES, name="dense2", kernel_initializer=flow.truncated_normal(0.1),
                                       model_distribute=model_distribute)
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    return train_job


def run(job: Any, steps: int = 3) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """Losses of ``steps`` calls, then every variable."""
    losses = [job(*data(i)).copy() for i in range(steps)]
    variables = {name: np.array(v) for name, v in flow.get_all_variables().items()}
    return losses, variables


def one_device_reference(model_distribute: Any = None, steps: int = 3) -> tuple[list, dict]:
    flow.clear_default_session()
    out = run(mlp_train("0:0", model_distribute), steps)
    flow.clear_default_session()
    return out
