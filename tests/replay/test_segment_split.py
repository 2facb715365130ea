"""A long run of fusable acts becomes several segments of at most ``fused.MAX_SEGMENT_CALLS`` calls each (a
function's compile grows faster than its size: docs/performance.md), cut between chains and pairs, never inside
one; the cut segments compute the protocol's bits, serially and in lanes; a short run stays one segment."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab.replay.fused as fused_module
from flowlab.kernels.numba_cpu.array import copy_flat
from flowlab.kernels.numba_cpu.math import _relu
from flowlab.kernels.numba_cpu.nn import _bias_add_rows
from flowlab.kernels.registry import FusedCall
from flowlab.replay.combine import segment_calls, split_run
from flowlab.replay.fused import Segment
from tests.helpers.lanes import lane_schedules, lanes_run
from tests.helpers.replay_models import MODELS
from tests.helpers.replay_proof import CALLS, assert_replayed_and_fused, assert_same, run

pytestmark = pytest.mark.usefixtures("fuse_in_call")


def _run_of(calls: list[FusedCall]) -> list[tuple[None, None, FusedCall]]:
    return [(None, None, call) for call in calls]


def _key(made: list[tuple[int, FusedCall]]) -> list[tuple[int, object, tuple[object, ...]]]:
    """Calls compared by index, function and where their arrays are (a FusedCall's == compares arrays' values)."""
    return [(index, call.fn, tuple((a.ctypes.data, a.shape) if isinstance(a, np.ndarray) else id(a)
                                   for a in call.args)) for index, call in made]


def _pairs_and_copies(n: int) -> list[FusedCall]:
    """``n`` times a bias_add followed by its relu (one pair call: kernels/numba_cpu/pairs.py), then a copy."""
    calls = []
    for _ in range(n):
        a, b = np.ones((3, 4), np.float32), np.ones(4, np.float32)
        t, y = np.empty_like(a), np.empty_like(a)
        calls += [FusedCall(_bias_add_rows, (a, b, t)), FusedCall(_relu, (t, y)),
                  FusedCall(copy_flat, (y, np.empty_like(y)))]
    return calls


@pytest.mark.parametrize("limit", [2, 3, 5, 7, 1000])
def test_split_run_makes_the_whole_runs_calls_in_pieces_of_at_most_limit(limit: int) -> None:
    run_ = _run_of(_pairs_and_copies(7))  # 21 acts, 14 calls: 7 pairs and 7 copies
    whole = segment_calls(run_)
    assert len(whole) == 14
    pieces = split_run(run_, limit)
    assert [entry for piece, _ in pieces for entry in piece] == run_  # every act once, in order
    assert len(pieces) == -(-14 // limit) if limit < 14 else len(pieces) == 1
    made, start = [], 0
    for piece, calls in pieces:
        assert 0 < len(calls) <= limit
        assert _key(calls) == _key(segment_calls(piece))  # a piece on its own makes the calls it was given
        made += [(index + start, call) for index, call in calls]
        start += len(piece)
    assert _key(made) == _key(whole)  # ... which are the whole run's: no pair was cut


def test_pieces_are_even() -> None:
    """15 calls at most 7 a piece: 5 + 5 + 5, not 7 + 7 + 1 (a tail of one call would compile for nothing)."""
    run_ = _run_of([FusedCall(copy_flat, (np.ones(3), np.empty(3))) for _ in range(15)])
    assert [len(calls) for _, calls in split_run(run_, 7)] == [5, 5, 5]


def _segments(layer: object) -> list[list[Segment]]:
    return [[step for step in schedule.fused if isinstance(step, Segment)]
            for schedule in layer.schedules.values() if schedule.fused is not None]  # type: ignore[attr-defined]


def test_a_long_run_is_several_segments_with_the_protocols_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    model = MODELS["mlp_sgd_momentum"]
    whole = run(model, True, CALLS, monkeypatch)
    # at the default limit each run of the model's schedules is one segment (the MLP train step: one)
    assert all(len(found) == 1 for found in _segments(whole["layer"])), _segments(whole["layer"])
    train = max((s[0] for s in _segments(whole["layer"])), key=lambda s: s.calls)
    assert 8 < train.calls <= fused_module.MAX_SEGMENT_CALLS

    monkeypatch.setattr(fused_module, "MAX_SEGMENT_CALLS", 8)
    protocol = run(model, False, CALLS, monkeypatch)
    cut = run(model, True, CALLS, monkeypatch)
    assert_same(protocol, cut)
    assert_replayed_and_fused(cut, "train")
    longest = max(_segments(cut["layer"]), key=len)
    assert len(longest) == -(-train.calls // 8)
    assert all(0 < s.calls <= 8 and s.fn is not None for s in longest)
    assert sum(len(s.actors) for s in longest) == len(train.actors)


def test_lanes_cut_their_long_runs_with_the_protocols_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("flowlab.replay.layer.FUSE_AFTER", 3)
    monkeypatch.setattr(fused_module, "MAX_SEGMENT_CALLS", 4)
    protocol, replayed = lanes_run("mlp_sgd_momentum", 2, monkeypatch)
    assert_same(protocol, replayed)
    segments = {id(s): s for schedule in lane_schedules(replayed["layer"]) for s in schedule.lanes.segment_of.values()}
    assert segments and all(0 < s.calls <= 4 for s in segments.values())
    # some lane run was long enough to be cut: two segments follow each other with no hand-off between them
    programs = [lane.program for schedule in lane_schedules(replayed["layer"]) for lane in schedule.lanes.lanes]
    assert any(isinstance(first, Segment) and isinstance(then, Segment) and signal is None and not waits
               for program in programs for (first, _, signal), (then, waits, _) in zip(program, program[1:]))


def test_the_schedules_of_rotating_registers_share_their_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """On 2 devices a slice boxing's output has two registers, so the train call has a schedule per order of them
    (tests/helpers/lanes.py): their segments differ only in the views' offsets, an argument, so their source is
    the same file, compiled once, and their calls are still the protocol's bits."""
    monkeypatch.setattr("flowlab.replay.layer.FUSE_AFTER", 3)
    monkeypatch.setenv("FLOWLAB_THREADS", "0")
    protocol = run(MODELS["mlp_sgd_momentum"], False, 24, monkeypatch, devices=2)
    replayed = run(MODELS["mlp_sgd_momentum"], True, 24, monkeypatch, devices=2)
    assert_same(protocol, replayed)
    train = [s for s in replayed["layer"].schedules.values() if s.fused is not None and "train_job" in s.key]
    assert len(train) >= 2, replayed["layer"].schedules
    files = [[step.source_path for step in s.fused if isinstance(step, Segment)] for s in train]
    assert all(found == files[0] for found in files), files
    fns = {id(step.fn) for s in train for step in s.fused if isinstance(step, Segment)}
    assert len(fns) == len(files[0])  # one compiled function per file
