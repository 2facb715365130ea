"""Data-parallel training replayed in lanes (replay/lanes.py): the model, its batches, and the lane schedules of a
runtime."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from tests.helpers.replay_models import MODELS
from tests.helpers.replay_proof import run

# A SliceBoxing's ``out`` has two registers (OneFlow's register_num 2): consecutive calls alternate between the
# schedules of the registers' orders (LeNet has 9), so each reaches FUSE_AFTER replays later than on one device.
# Fusing after 3 replays here lets every model's lanes fuse within the run.
CALLS = 24


def lanes_run(model: str, devices: int, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict]:
    """(the one-thread protocol, lanes replayed) of ``CALLS`` calls of ``model`` on ``devices`` CPU devices."""
    # on ``devices`` devices (run's devices=): the default placement is every device, so the model runs data-parallel
    monkeypatch.setenv("FLOWLAB_THREADS", "0")
    protocol = run(MODELS[model], False, CALLS, monkeypatch, devices=devices)
    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    replayed = run(MODELS[model], True, CALLS, monkeypatch, devices=devices)
    for result in (protocol, replayed):  # one runtime has OS threads, the other none: all else is compared
        for state in [*result["states"], result["state"]]:
            state["runtime"].pop("threads")
    return protocol, replayed


def lane_schedules(layer: object) -> list[object]:
    return [s for s in layer.schedules.values() if s.lanes is not None]  # type: ignore[attr-defined]


def define_dp(devices: int, batch: int = 12):
    """A data-parallel MLP train job on ``devices`` CPU devices, run in parallel mode (FLOWLAB_THREADS=1)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def dp_train(x: tp.Numpy.Placeholder((batch, 6)), y: tp.Numpy.Placeholder((batch,), dtype=flow.int32)
                 ) -> tp.Numpy:
        init = flow.truncated_normal(0.1)
        h = flow.layers.dense(x, 8, activation=flow.nn.relu, kernel_initializer=init, name="hidden")
        logits = flow.layers.dense(h, 3, kernel_initializer=init, name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    return dp_train


def batches(n: int, batch: int = 12) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    return [(rng.standard_normal((batch, 6)).astype(np.float32), rng.integers(0, 3, batch).astype(np.int32))
            for _ in range(n)]
