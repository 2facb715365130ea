"""The replay proof (tests/replay/test_replay_proof.py) for the kernels that only shapes larger than its models' choose:
an MLP of 10 classes and a hidden layer of 80, whose output-layer weight gradient (10 x 80 from a batch of 16) runs
on the Numba matmul's few-rows kernel. Its replayed and fused calls must be the protocol's bit for bit: the segment
calls an inlined copy of the kernel, compiled with the shapes as constants."""

from __future__ import annotations

import pytest

from flowlab.kernels.numba_cpu import nn
from flowlab.replay.fused import Segment, fused_call_of
from tests.helpers.replay_proof import CALLS, assert_replayed_and_fused, assert_same, run
from tests.helpers.wide_mlp import build_wide_mlp


def test_the_few_rows_matmul_fused_is_the_protocol_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "0")
    monkeypatch.setattr(nn, "few_rows_faster", lambda *shape: True)  # whatever this machine measured faster
    protocol = run(build_wide_mlp, False, CALLS, monkeypatch)
    replayed = run(build_wide_mlp, True, CALLS, monkeypatch)
    assert_replayed_and_fused(replayed, "train")
    segments = [step for schedule in replayed["layer"].schedules.values() for step in schedule.fused or ()
                if isinstance(step, Segment)]
    kernels = {fused_call_of(actor, step).fn for segment in segments
               for actor, step in zip(segment.actors, segment.steps)}
    assert nn._dot_few_rows in kernels, "the model no longer exercises the few-rows kernel"
    assert_same(protocol, replayed)


def test_the_dense_layers_on_gemm_nt_fused_are_the_protocol_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    """x W^T on the micro-kernel (microgemm.gemm_nt), its scratch buffers Owned by the segment."""
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "0")
    monkeypatch.setattr(nn, "nt_micro_faster", lambda *shape: True)  # whatever this machine measured faster
    protocol = run(build_wide_mlp, False, CALLS, monkeypatch)
    replayed = run(build_wide_mlp, True, CALLS, monkeypatch)
    assert_replayed_and_fused(replayed, "train")
    kernels = {fused_call_of(actor, step).fn for schedule in replayed["layer"].schedules.values()
               for segment in schedule.fused or () if isinstance(segment, Segment)
               for actor, step in zip(segment.actors, segment.steps)}
    assert nn.gemm_nt in kernels, "the model no longer exercises gemm_nt"
    assert_same(protocol, replayed)
