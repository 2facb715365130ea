"""The training models of the test suite, small, as call sequences for the replay proof (test_replay_proof.py).

Each ``build_*`` defines its jobs in the default session and returns ``call(k)``: the k-th call of the loop
(a train call, sometimes an eval call or a checkpoint round trip), returning what the calls returned. Inputs
come from ``k`` alone, so two sessions see the same calls.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

import flowlab as flow
import flowlab.typing as tp

Call = Callable[[int], list[np.ndarray]]
# One path per process: it is data the model-io jobs push (the same in every run a proof compares), and two pytest
# processes proving at once must not save into each other's checkpoint folder.
FOLDER = Path(tempfile.gettempdir()) / f"flowlab-replay-proof-{os.getpid()}"
B, D, H, C = 8, 12, 6, 3


def _rng(k: int) -> np.random.Generator:
    return np.random.default_rng(1000 + k)


def _xy(k: int, shape: tuple[int, ...] = (B, D), classes: int = C) -> tuple[np.ndarray, np.ndarray]:
    rng = _rng(k)
    return rng.standard_normal(shape).astype(np.float32), rng.integers(0, classes, shape[0]).astype(np.int32)


def _mlp(x, name: str = "") -> object:
    init = flow.truncated_normal(0.1)
    h = flow.layers.dense(x, H, activation=flow.nn.relu, kernel_initializer=init, name=f"{name}hidden")
    return flow.layers.dense(h, C, kernel_initializer=init, name=f"{name}output")


def build_mlp(optimizer: Callable[[], object], watched: list[np.ndarray], eval_every: int = 0,
              regularizer: object = None, eval_until: int = 12) -> Call:
    """test_training's and test_replay's MLP: dense-relu-dense, softmax cross entropy, ``optimizer()``; the
    logits' gradient watched; an eval job sharing the weights every ``eval_every`` calls (before ``eval_until``:
    later calls are a run of train calls only)."""

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        if regularizer is not None:
            w = flow.get_variable("scale", shape=(D,), initializer=flow.constant_initializer(1.0),
                                  regularizer=regularizer)
            x = x * w
        logits = _mlp(x)
        flow.watch_diff(logits, watched.append)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        optimizer().minimize(loss)
        return loss

    @flow.global_function()
    def eval_job(x: tp.Numpy.Placeholder((B, D))) -> tp.Numpy:
        return flow.math.argmax(_mlp(x))

    def call(k: int) -> list[np.ndarray]:
        x, y = _xy(k)
        out = [train_job(x, y)]
        if eval_every and k % eval_every == eval_every - 1 and k < eval_until:
            out.append(eval_job(x))
        return out

    return call


def piecewise(values: list[float]) -> object:
    return flow.optimizer.PiecewiseConstantScheduler([5], values)


OPTIMIZERS: dict[str, Callable[[], object]] = {  # each with another scheduler
    "sgd_momentum": lambda: flow.optimizer.SGD(piecewise([0.1, 0.05]), momentum=0.9),
    "sgd_clip": lambda: flow.optimizer.SGD(
        flow.optimizer.CosineScheduler(0.5, 20, alpha=0.1), momentum=0,
        grad_clipping=flow.optimizer.grad_clipping.by_global_norm(0.5)),
    "adam": lambda: flow.optimizer.Adam(
        flow.optimizer.PolynomialScheduler(0.01, 20, end_learning_rate=0.001, power=2.0), do_bias_correction=True),
    "adamw": lambda: flow.optimizer.AdamW(
        flow.optimizer.CustomScheduler(0.01, warmup=flow.optimizer.warmup.linear(4, 0.5)), weight_decay=0.1),
    "rmsprop": lambda: flow.optimizer.RMSProp(piecewise([0.01, 0.02]), decay_rate=0.9, epsilon=1e-8),
}


def build_lenet(watched: list[np.ndarray]) -> Call:
    """test_lenet's LeNet (conv SAME + relu, max pool, dense, dropout in train), smaller; a checkpoint saved and
    loaded back in the middle of the run (the model-io jobs are captured like any call)."""
    batch = 4
    folder = FOLDER / "lenet"
    shutil.rmtree(folder, ignore_errors=True)

    def lenet(data, train: bool):
        init = flow.truncated_normal(0.1)
        conv1 = flow.layers.conv2d(data, 4, 3, padding="SAME", activation=flow.nn.relu, name="conv1",
                                   kernel_initializer=init)
        pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1", data_format="NCHW")
        conv2 = flow.layers.conv2d(pool1, 8, 3, padding="SAME", activation=flow.nn.relu, name="conv2",
                                   kernel_initializer=init)
        pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2", data_format="NCHW")
        hidden = flow.layers.dense(flow.reshape(pool2, [batch, -1]), 16, activation=flow.nn.relu,
                                   kernel_initializer=init, name="dense1")
        if train:
            hidden = flow.nn.dropout(hidden, rate=0.5, seed=7)
        return flow.layers.dense(hidden, 10, kernel_initializer=init, name="dense2")

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((batch, 1, 8, 8)),
                  labels: tp.Numpy.Placeholder((batch,), dtype=flow.int32)) -> tp.Numpy:
        logits = lenet(images, train=True)
        flow.watch(logits, watched.append)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.05]), momentum=0.9).minimize(loss)
        return loss

    @flow.global_function()
    def eval_job(images: tp.Numpy.Placeholder((batch, 1, 8, 8))) -> tp.Numpy:
        return lenet(images, train=False)

    def call(k: int) -> list[np.ndarray]:
        x, y = _xy(k, (batch, 1, 8, 8), 10)
        out = [train_job(x, y)]
        if k % 6 == 5:
            out.append(eval_job(x))
        if k == 4:
            flow.checkpoint.save(folder / f"k{k}")
        if k == 9:
            flow.train.CheckPoint().load(folder / "k4")
        return out

    return call


def build_batchnorm(watched: list[np.ndarray]) -> Call:
    """test_conv's batch normalization: moving statistics updated by train calls, used by predict calls."""

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((8, 3, 2, 2))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(1,), initializer=flow.constant_initializer(1.0))
        y = flow.layers.batch_normalization(x * w, axis=1, momentum=0.8, name="bn")
        flow.watch_diff(y, watched.append)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.01]), momentum=0).minimize(
            flow.math.reduce_sum(y * y))
        return y

    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((8, 3, 2, 2))) -> tp.Numpy:
        return flow.layers.batch_normalization(x, axis=1, momentum=0.8, name="bn")

    def call(k: int) -> list[np.ndarray]:
        x = (_rng(k).standard_normal((8, 3, 2, 2)) * np.array([1, 2, 3])[None, :, None, None] + 1).astype(np.float32)
        out = [train(x)]
        if k % 4 == 1:
            out.append(predict(x))
        return out

    return call


def build_watch_dropout(watched: list[np.ndarray]) -> Call:
    """test_watch's and test_cnn's: watch and watch_diff on logits, a seeded dropout (a new mask each call), a
    random-normal initializer, and a tp.Callback return."""

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((6, 5)), labels: tp.Numpy.Placeholder((6,), dtype=flow.int32),
              ) -> tp.Callback[tp.Numpy]:
        logits = flow.layers.dense(x, 4, kernel_initializer=flow.random_normal_initializer(), name="out")
        logits = flow.nn.dropout(logits, rate=0.25, seed=3)
        flow.watch(logits, watched.append)
        flow.watch_diff(logits, watched.append)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    def call(k: int) -> list[np.ndarray]:
        x, y = _xy(k, (6, 5), 4)
        got: list[np.ndarray] = []
        train(x, y)(got.append)
        return got

    return call


MODELS: dict[str, Callable[[list[np.ndarray]], Call]] = {
    "mlp_sgd_momentum": lambda w: build_mlp(OPTIMIZERS["sgd_momentum"], w, eval_every=4),
    "mlp_sgd_clip_l1_l2": lambda w: build_mlp(OPTIMIZERS["sgd_clip"], w,
                                              regularizer=flow.regularizers.l1_l2(0.01, 0.1)),
    **{f"mlp_{name}": (lambda w, o=OPTIMIZERS[name]: build_mlp(o, w)) for name in ("adam", "adamw", "rmsprop")},
    "lenet": build_lenet,
    "batchnorm": build_batchnorm,
    "watch_dropout": build_watch_dropout,
}
