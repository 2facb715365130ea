"""The replay proof for batch norm, its gradient and the residual add: they have fused forms, so a ResNet block's
kernels are one run of fused calls instead of a run broken at each of them (docs/performance.md, "Compiling a big
Plan's segments": a 2-device ResNet-50 compiled 370 small segments). Fused, every call and every memory block must
be the protocol's bit for bit, the moving mean and variance (updated in place) included."""

from __future__ import annotations

import pytest

from flowlab.kernels.numba_cpu import math as numba_math
from flowlab.kernels.numba_cpu import norm
from flowlab.replay.fused import Segment, fused_call_of
from tests.helpers.replay_proof import CALLS, assert_replayed_and_fused, assert_same, run
from tests.helpers.wide_mlp import build_residual_bn


def test_batch_norm_and_the_residual_add_fuse_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "0")
    protocol = run(build_residual_bn, False, CALLS, monkeypatch)
    replayed = run(build_residual_bn, True, CALLS, monkeypatch)
    assert_replayed_and_fused(replayed, "train")
    segments = [step for schedule in replayed["layer"].schedules.values() for step in schedule.fused or ()
                if isinstance(step, Segment) and any("train" in name for name in schedule.key)]
    kernels = {fused_call_of(actor, step).fn for segment in segments
               for actor, step in zip(segment.actors, segment.steps)}
    assert {norm._norm, norm._norm_grad, numba_math._add} <= kernels, kernels
    assert_same(protocol, replayed)
