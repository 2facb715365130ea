"""The fused (Numba) forms of the slice-boxing kernels (kernels/numba_cpu/boxing.py): the NumPy kernel's bytes for
every contiguous case, no fused form for a strided part, and a data-parallel step's boxing run in Numba on its
lanes: inside their fused segments, or alone as its fused call."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import flowlab as flow
from flowlab.replay.fused import FUSE_AFTER, fused_call_of
from flowlab.runtime.boxing_kernels import boxing_kernel
from tests.helpers.lanes import batches, define_dp, lane_schedules


def task(op_type: str, in_slices: list[list[tuple[int, int]]], out_slice: list[tuple[int, int]]) -> SimpleNamespace:
    op = SimpleNamespace(op_type=op_type, attrs={"in_slice": in_slices, "out_slice": out_slice})
    return SimpleNamespace(exec_sequence=(op,), name="box", task_type="SliceBoxing", consumed_regst_desc_id={},
                           produced_regst_desc={"out": SimpleNamespace(piece_inplace_consumed_regst_desc_id=-1)})


def both(kind: str, in_slices: list, out_slice: list, ins: list[np.ndarray], out_size: int) -> tuple[bytes, bytes]:
    """(the NumPy kernel's output bytes, the fused call's) for the same inputs."""
    kernel = boxing_kernel(None, task(kind, in_slices, out_slice))  # type: ignore[arg-type]
    plain, fused = np.full(out_size, np.nan, np.float32), np.full(out_size, np.nan, np.float32)
    kernel(ins, [plain])
    call = kernel.fused(ins, [fused])  # type: ignore[attr-defined]
    assert call is not None
    call.fn(*call.args)
    return plain.tobytes(), fused.tobytes()


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_fused_add_is_the_numpy_left_fold(n: int) -> None:
    rng = np.random.default_rng(n)
    # values of very different magnitudes: a different order of the adds would round differently
    ins = [(rng.standard_normal(60) * 10.0 ** rng.integers(-4, 5, 60)).astype(np.float32) for _ in range(n)]
    plain, fused = both("slice_boxing_add", [[(0, 6), (0, 10)]] * n, [(2, 6), (0, 10)], ins, 40)
    assert plain == fused


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_fused_all_gather_copies_every_piece(n: int) -> None:
    rows = [(k * 5 // n, (k + 1) * 5 // n) for k in range(n)]  # S(0) pieces of a (5, 3) view, balanced
    ins = [np.arange(100 * k, 100 * k + (hi - lo) * 3, dtype=np.float32) for k, (lo, hi) in enumerate(rows)]
    plain, fused = both("slice_boxing_copy", [[r, (0, 3)] for r in rows], [(0, 5), (0, 3)], ins, 15)
    assert plain == fused == np.concatenate(ins).tobytes()


def test_no_fused_form_for_a_strided_part_or_too_many_parts() -> None:
    # S(1) -> B: each piece is a column block of the output, not one run of its bytes
    kernel = boxing_kernel(None, task("slice_boxing_copy", [[(0, 4), (0, 2)], [(0, 4), (2, 4)]],  # type: ignore
                                      [(0, 4), (0, 4)]))
    ins, out = [np.ones(8, np.float32), np.ones(8, np.float32)], [np.empty(16, np.float32)]
    assert kernel.fused(ins, out) is None  # type: ignore[attr-defined]
    kernel = boxing_kernel(None, task("slice_boxing_add", [[(0, 2)]] * 5, [(0, 2)]))  # type: ignore[arg-type]
    assert kernel.fused([np.ones(2, np.float32)] * 5, [np.empty(2, np.float32)]) is None  # type: ignore[attr-defined]


def test_a_data_parallel_steps_boxing_runs_inside_its_lanes_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "0")
    job = define_dp(2)
    for x, y in batches(4 * FUSE_AFTER):
        job(x, y)
    schedules = [s for s in lane_schedules(flow.default_session().runtime.layer) if "dp_train" in s.key]
    assert schedules
    for schedule in schedules:
        lanes = schedule.lanes
        boxing = [i for i, actor in enumerate(lanes.actors) if actor is not None and actor.task.is_boxing]
        assert len(boxing) >= 8  # reduce-scatter and all-gather of four gradients on two devices, and the push
        unfusable = [lanes.actors[i].name for i in boxing
                     if fused_call_of(lanes.actors[i], schedule.steps[i]) is None]
        assert not unfusable, f"boxing acts with no fused form: {unfusable}"
        # a boxing act that waits on the other lane and is waited on by it stays a step of its own; the others
        # (an all-gather's copy whose inputs are here, the push's scatter) join the lane's segments
        assert sum(i in lanes.segment_of for i in boxing) >= 2, [lanes.actors[i].name for i in boxing]
        # ... and one left on its own runs its Numba call directly, not the NumPy kernel (lanes._direct)
        entries = {index: fn for lane in lanes.lanes for (fn, _, _), index in zip(lane.program, lane.indices)}
        python = [lanes.actors[i].name for i in boxing if i not in lanes.segment_of and getattr(
            entries[i], "func", None) is not fused_call_of(lanes.actors[i], schedule.steps[i]).fn]
        assert not python, f"boxing acts run by their NumPy kernel between a lane's segments: {python}"
    flow.clear_default_session()


def written_bytes(step: object, actor: object) -> list[tuple[int, int]]:
    """The byte ranges a step's kernel really writes: its outputs, and its inputs only for an op that mutates them
    (no outputs: the *_update ops, assign; a system op other than boxing, which only reads its inputs)."""
    from numpy.lib.array_utils import byte_bounds

    from flowlab.ops.registry import get_op_def

    if actor is None:
        return [(-2, -1)]
    op = actor.task.exec_sequence[0]  # type: ignore[attr-defined]
    ins, outs = step.args  # type: ignore[attr-defined]
    mutates = not actor.task.is_boxing and (not op.output_lbns or get_op_def(op.op_type).system)  # type: ignore
    arrays = [*outs, *(ins if mutates else ())]
    return [byte_bounds(a) if isinstance(a, np.ndarray) else (-2, -1) for a in arrays]


def test_every_wait_between_lanes_guards_a_real_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two boxing acts reading the same gradient (the two devices' halves of a reduce-scatter, the two copies of an
    all-gather) and an op reading what a boxing act reads do not wait on each other: a lane waits on another
    only where one of the two steps writes bytes the other touches, so the devices' boxing runs at once."""
    from flowlab.replay.lanes import step_ranges

    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    job = define_dp(2)
    for x, y in batches(3):
        job(x, y)
    [schedule, *_] = [s for s in lane_schedules(flow.default_session().runtime.layer) if "dp_train" in s.key]
    lanes = schedule.lanes
    signalled = {id(signal): index for lane in lanes.lanes for *_, signal, index in lane.steps if signal is not None}
    false = []
    for lane in lanes.lanes:
        for step, actor, waits, *_ in lane.steps:
            for lock in waits:
                other = signalled[id(lock)]
                mine = [(lo, hi) for lo, hi, _ in step_ranges(step, actor)]
                theirs = [(lo, hi) for lo, hi, _ in step_ranges(schedule.steps[other], lanes.actors[other])]
                w1, w2 = written_bytes(step, actor), written_bytes(schedule.steps[other], lanes.actors[other])
                real = any(a < d and c < b for a, b in w1 for c, d in theirs) or any(
                    a < d and c < b for a, b in w2 for c, d in mine)
                if not real:
                    false.append((actor.name if actor else "notify", lanes.actors[other].name))
    assert not false, f"waits guarding no write: {false}"
    flow.clear_default_session()


def test_the_train_step_counter_does_not_wait_behind_a_lanes_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    """The train step's counter (scalar_add, a one-device op on the other device's thread) feeds the first
    device's backward through a reused memory block: its lane runs it before its own backward, so the first
    device does not wait for the whole of the second's (replay/lane_order.py)."""
    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    job = define_dp(2)
    for x, y in batches(3):
        job(x, y)
    for schedule in lane_schedules(flow.default_session().runtime.layer):
        if "dp_train" not in schedule.key:
            continue
        lanes = schedule.lanes
        op = {i: a.task.exec_sequence[0] for i, a in enumerate(lanes.actors) if a is not None}
        [counter] = [i for i, o in op.items() if o.op_type == "scalar_add"]
        lane = lanes.lane_of[counter]
        backward = [i for i, o in op.items() if lanes.lane_of[i] == lane and o.op_type == "matmul"
                    and not o.name.startswith(("hidden", "output"))]  # autograd's gradient matmuls
        assert backward and all(lanes.positions[counter] < lanes.positions[i] for i in backward), (
            [(lanes.positions[i], op[i].name) for i in [counter, *backward]])
    flow.clear_default_session()
