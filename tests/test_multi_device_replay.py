"""The replay layer over a multi-device Plan: boxing tasks are kernels like any other, so a data-parallel model's
replayed and fused calls are the protocol's bit for bit (the proof of tests/test_replay_proof.py, on 2 devices)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
from tests.replay_models import MODELS
from tests.test_replay_proof import CALLS, assert_replayed_and_fused, assert_same, run


@pytest.mark.parametrize("model", ["mlp_sgd_momentum"])
def test_two_device_calls_replay_bit_for_bit(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    flow.config.cpu_device_num(2)  # the default placement: every device, so the model runs data-parallel
    protocol = run(MODELS[model], False, CALLS, monkeypatch)
    plan = flow.default_session().plan
    assert any(t.is_boxing for t in plan.tasks) and max(t.parallel_num for t in plan.tasks) == 2
    replayed = run(MODELS[model], True, CALLS, monkeypatch)
    assert_replayed_and_fused(replayed, "train")
    assert_same(protocol, replayed)
    assert len(protocol["watched"]) == CALLS  # one watched value a call, not one per device
    one = np.asarray(protocol["watched"][0])
    assert one.shape[0] == 8  # the whole (logical) blob
