"""A data-parallel model whose optimizer placement (compiler/optimizer_placement.py) the tests vary: its shapes,
batches, initial weights and configuration."""

from __future__ import annotations

from typing import Any

import numpy as np

import flowlab as flow
import flowlab.typing as tp

B, D, H, C, STEPS = 12, 16, 24, 6, 4  # H and C divide by 2 and 3, so every variable qualifies at threshold 1


LR, BETA = 0.1, 0.9


ADAM = {"lr": 0.01, "b1": 0.9, "b2": 0.999, "eps": 1e-8}


def optimizer(kind: str) -> Any:
    if kind == "momentum":
        return flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=BETA)
    return flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [ADAM["lr"]]), do_bias_correction=True)


def config(mode: str | None, threshold: int | None = 1) -> flow.FunctionConfig:
    cfg = flow.FunctionConfig()
    if mode is not None:
        cfg.optimizer_placement_optimization_mode(mode)
    if threshold is not None:
        cfg.optimizer_placement_optimization_threshold(threshold)
    return cfg


def define(devices: int, mode: str | None, kind: str = "momentum", threshold: int | None = 1,
           hidden: int = H) -> Any:
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    placement = "0:0" if devices == 1 else f"0:0-{devices - 1}"

    @flow.global_function(type="train", function_config=config(mode, threshold))
    def train_job(images: tp.Numpy.Placeholder((B, D)),
                  labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", placement):
            h = flow.layers.dense(images, hidden, activation=flow.nn.relu, name="hidden")
            logits = flow.layers.dense(h, C, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
            optimizer(kind).minimize(loss)
        return loss

    return train_job


def initial_weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {"hidden-weight": rng.normal(0, 0.1, (H, D)).astype(np.float32),
            "hidden-bias": rng.normal(0, 0.1, H).astype(np.float32),
            "output-weight": rng.normal(0, 0.1, (C, H)).astype(np.float32),
            "output-bias": rng.normal(0, 0.1, C).astype(np.float32)}


def batches() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(11)
    return [(rng.standard_normal((B, D)).astype(np.float32), rng.integers(0, C, B).astype(np.int32))
            for _ in range(STEPS)]


def train(devices: int, mode: str | None, kind: str) -> tuple[np.ndarray, dict[str, np.ndarray], Any]:
    job = define(devices, mode, kind)
    flow.load_variables(initial_weights())
    losses = np.array([job(x, y) for x, y in batches()])
    return losses, flow.get_all_variables(), flow.default_session()


def compiled(devices: int, mode: str | None, threshold: int | None = 1, hidden: int = H, kind: str = "momentum"):
    job = define(devices, mode, kind, threshold, hidden)
    job(*batches()[0])
    session = flow.default_session()
    return session, session.job_set.job("train_job")
