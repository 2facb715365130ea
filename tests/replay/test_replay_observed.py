"""Observation does not change the executor (issue 26): a subscriber attached to a session whose calls replay
(fused, generated) gets, for every call, the act events protocol stepping gives it, field for field (sequence
number, actor, act id, registers read and written, tier), each naming the executor that ran the call, and the
calls stay on the replay executors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.replay.fused import FUSE_AFTER

pytestmark = pytest.mark.usefixtures("fuse_in_call")

B, D, H, C = 8, 6, 5, 4
RNG = np.random.default_rng(11)
BATCHES = [(RNG.standard_normal((B, D)).astype(np.float32), RNG.integers(0, C, B).astype(np.int32))
           for _ in range(FUSE_AFTER + 6)]


def bits(a: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    a = np.asarray(a)
    return str(a.dtype), a.shape, a.tobytes()


def observed_run(replay: bool, monkeypatch: pytest.MonkeyPatch, devices: int = 1) -> dict[str, Any]:
    monkeypatch.setenv("FLOWLAB_REPLAY", "1" if replay else "0")
    monkeypatch.setenv("FLOWLAB_FUSE", "1")
    # the protocol on one scheduler thread: one act order (on OS threads it varies); a replay's capture steps one
    monkeypatch.setenv("FLOWLAB_THREADS", "" if replay else "0")
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            h = flow.layers.dense(x, H, activation=flow.nn.relu,
                                  kernel_initializer=flow.random_normal_initializer(seed=1), name="hidden")
            logits = flow.layers.dense(h, C, kernel_initializer=flow.random_normal_initializer(seed=2), name="out")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    session = flow.default_session()
    session.try_init()
    events: list[Any] = []
    session.runtime.hooks.append(events.append)  # from the first call on: every call is observed
    per_call, out = [], []
    for x, y in BATCHES:
        before = len(events)
        out.append(bits(train_job(x, y)))
        per_call.append(events[before:])
    session.runtime.hooks.remove(events.append)
    return {"calls": per_call, "out": out, "executor": session.executor.name, "w": flow.get_all_variables()}


def fields(event: Any) -> tuple[Any, ...]:
    return (event.seq, event.actor_id, event.actor_name, event.act_id, event.read, event.written, event.tier)


@pytest.mark.parametrize("devices", [1, 2], ids=["one-device", "two-devices"])
def test_a_subscriber_sees_the_protocols_acts_and_the_calls_stay_replayed(monkeypatch: pytest.MonkeyPatch,
                                                                          devices: int) -> None:
    protocol = observed_run(False, monkeypatch, devices)
    replayed = observed_run(True, monkeypatch, devices)
    assert replayed["out"] == protocol["out"]
    for name, value in protocol["w"].items():
        assert bits(replayed["w"][name]) == bits(value), name
    for k, (want, got) in enumerate(zip(protocol["calls"], replayed["calls"], strict=True)):
        assert [fields(e) for e in got] == [fields(e) for e in want], f"call {k}"
        assert {e.executor for e in want} == {"protocol"}
    executors = [{e.executor for e in call} for call in replayed["calls"]]
    assert executors[0] == {"protocol"}  # the first call is stepped (and captured)
    assert all(len(names) == 1 for names in executors)  # each call's events name the one executor that ran it
    later = {next(iter(names)) for names in executors[FUSE_AFTER + 2:]}
    assert later == {replayed["executor"]} and replayed["executor"] in ("callgen", "lanes"), executors
