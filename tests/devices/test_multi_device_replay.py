"""The replay layer over a multi-device Plan: boxing tasks are kernels like any other, so a data-parallel model's
replayed and fused calls are the protocol's bit for bit (the proof of tests/replay/test_replay_proof.py, on 2
devices)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
from tests.helpers.replay_models import MODELS
from tests.helpers.replay_proof import assert_replayed_and_fused, assert_same, bits, run

# the compiled segment (and the generated call) must run by a given call: compiled in the call that fuses
pytestmark = pytest.mark.usefixtures("fuse_in_call")

# A SliceBoxing's ``out`` has two registers (OneFlow's register_num 2), so consecutive calls start from the two
# orders of each one and alternate schedules (eval calls in between add more): each schedule reaches its
# FUSE_AFTER-th replay later than on one device.
CALLS = 40


@pytest.mark.parametrize("model", ["mlp_sgd_momentum"])
def test_two_device_calls_replay_bit_for_bit(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # on 2 devices (run's devices=): the default placement is every device, so the model runs data-parallel
    # Parallel run mode (two compute threads) declines the replay layer, a serial schedule: the proof compares the
    # one-thread protocol with the replay, then the parallel protocol's values with both.
    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    parallel = run(MODELS[model], False, CALLS, monkeypatch, devices=2)
    monkeypatch.setenv("FLOWLAB_THREADS", "0")
    protocol = run(MODELS[model], False, CALLS, monkeypatch, devices=2)
    plan = flow.default_session().plan
    assert any(t.is_boxing for t in plan.tasks) and max(t.parallel_num for t in plan.tasks) == 2
    replayed = run(MODELS[model], True, CALLS, monkeypatch, devices=2)
    assert_replayed_and_fused(replayed, "train", CALLS)
    assert_same(protocol, replayed)
    for key in ("outputs", "watched"):
        assert [bits(x) for x in _flat(parallel[key])] == [bits(x) for x in _flat(protocol[key])], key
    assert {k: bits(v) for k, v in parallel["variables"].items()} == {
        k: bits(v) for k, v in protocol["variables"].items()}
    assert len(protocol["watched"]) == CALLS  # one watched value a call, not one per device
    one = np.asarray(protocol["watched"][0])
    assert one.shape[0] == 8  # the whole (logical) blob


def _flat(values: object) -> list[np.ndarray]:
    if isinstance(values, (list, tuple)):
        return [x for v in values for x in _flat(v)]
    if isinstance(values, dict):
        return [x for v in values.values() for x in _flat(v)]
    return [np.asarray(values)]
