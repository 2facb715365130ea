"""The replay proof (tests/replay/test_replay_proof.py) for the kernels that only shapes larger than its models' choose,
or that a machine chooses by measuring: an MLP of 10 classes and a hidden layer of 80, whose output-layer weight
gradient (10 x 80 from a batch of 16) runs on the Numba matmul's few-rows kernel, and whose dense layers' x W^T run
on the micro-kernel (microgemm.gemm_nt, its buffers Owned by the segment). Its replayed and fused calls must be the
protocol's bit for bit: the segment calls an inlined copy of the kernel, compiled with the shapes as constants."""

from __future__ import annotations

import pytest

from flowlab.kernels.numba_cpu import nn
from flowlab.replay.fused import Segment, fused_call_of
from tests.helpers.replay_proof import CALLS, assert_replayed_and_fused, assert_same, run
from tests.helpers.wide_mlp import build_wide_mlp


@pytest.mark.parametrize("choice, kernel", [("few_rows_faster", nn._dot_few_rows), ("nt_micro_faster", nn.gemm_nt)])
def test_the_measured_matmul_kernels_fused_are_the_protocol_bit_for_bit(choice, kernel, monkeypatch) -> None:
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "0")
    monkeypatch.setattr(nn, choice, lambda *shape: True)  # whatever this machine measured faster
    protocol = run(build_wide_mlp, False, CALLS, monkeypatch)
    replayed = run(build_wide_mlp, True, CALLS, monkeypatch)
    assert_replayed_and_fused(replayed, "train")
    kernels = {fused_call_of(actor, step).fn for schedule in replayed["layer"].schedules.values()
               for segment in schedule.fused or () if isinstance(segment, Segment)
               for actor, step in zip(segment.actors, segment.steps)}
    assert kernel in kernels, f"the model no longer exercises {kernel.__name__}"
    assert_same(protocol, replayed)
