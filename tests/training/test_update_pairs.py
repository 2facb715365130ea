"""A data-parallel weight gradient's last boxing act and the momentum update reading it, run as one pass on a lane
(kernels/numba_cpu/pairs.py ``_add2_momentum``, ``_copy2_momentum``): the bytes of the two kernels one after the
other, special values and regularizers included; refused where one pass could not give them; the boxing act run
on its reader's lane and next to it (replay/lane_order.py); and a data-parallel model's lanes using both pairs
are the protocol's bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
from flowlab.kernels.numba_cpu import pairs
from flowlab.kernels.numba_cpu.array import copy_flat
from flowlab.kernels.numba_cpu.boxing import box_add2, box_copy1, box_copy2
from flowlab.kernels.numba_cpu.optimizer import _momentum_lr
from flowlab.kernels.registry import FusedCall
from flowlab.replay.combine import segment_calls
from flowlab.replay.lane_order import schedule_order, to_reader_lanes
from tests.helpers.fused_pairs import bits, data
from tests.helpers.lanes import lane_schedules, lanes_run
from tests.helpers.optimizer_placement_plan import build_split
from tests.helpers.replay_models import MODELS
from tests.helpers.replay_proof import assert_same

F = np.float32


def constants(l1: float, l2: float, wd: float) -> tuple[np.float32, ...]:
    return F(0.9), F(0.25), F(l1), F(l2), F(wd)


def state(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A variable (special values in it), its momentum and the learning-rate blob."""
    return data((n,), seed), np.random.default_rng(seed + 1).standard_normal(n).astype(F), np.array([0.1], F)


@pytest.mark.parametrize("regularized", [False, True])
def test_add_then_momentum_is_the_two_kernels(regularized: bool) -> None:
    n = 37
    grads = data((2 * n,), 1), data((2 * n,), 2)  # each device's whole gradient; the add takes the second halves
    a, b = grads[0][n:], grads[1][n:]
    w1, v1, lr = state(n, 3)
    w2, v2, out1, out2 = w1.copy(), v1.copy(), np.full(n, 7.0, F), np.full(n, 7.0, F)
    c = constants(0.01, 0.02, 0.03) if regularized else constants(0, 0, 0)
    box_add2(a, b, out1), _momentum_lr(w1, out1, v1, lr, *c)
    call = pairs.pair_call(FusedCall(box_add2, (a, b, out2)), FusedCall(_momentum_lr, (w2, out2, v2, lr, *c)))
    assert call is not None and call.fn is pairs._add2_momentum
    call.fn(*call.args)
    assert bits(out1, w1, v1) == bits(out2, w2, v2)


def test_all_gather_copy_then_momentum_is_the_two_kernels() -> None:
    rows, cols = (3, 4), 5
    s0, s1 = data((rows[0] * cols,), 4), data((rows[1] * cols,), 5)
    w1, v1, lr = state(sum(rows) * cols, 6)
    w2, v2 = w1.copy(), v1.copy()
    diff1, diff2 = np.full((sum(rows), cols), 7.0, F), np.full((sum(rows), cols), 7.0, F)
    c = constants(0, 0, 0.01)
    halves = [(d[:rows[0]].reshape(-1), d[rows[0]:].reshape(-1)) for d in (diff1, diff2)]
    box_copy2(s0, halves[0][0], s1, halves[0][1]), _momentum_lr(w1.reshape(diff1.shape), diff1, v1, lr, *c)
    call = pairs.pair_call(FusedCall(box_copy2, (s0, halves[1][0], s1, halves[1][1])),
                           FusedCall(_momentum_lr, (w2.reshape(diff2.shape), diff2, v2, lr, *c)))
    assert call is not None and call.fn is pairs._copy2_momentum
    call.fn(*call.args)
    assert bits(diff1, w1, v1) == bits(diff2, w2, v2)


def test_no_update_pair_where_one_pass_could_differ() -> None:
    n = 8
    a, b, out = data((n,), 7), data((n,), 8), np.empty(n, F)
    w, v, lr = state(n, 9)
    c = constants(0, 0, 0)
    refused = [
        (FusedCall(box_add2, (a, b, out)), FusedCall(_momentum_lr, (w, out.copy(), v, lr, *c))),  # other gradient
        (FusedCall(box_add2, (a, b, out)), FusedCall(_momentum_lr, (w, out, v, lr, *c), True)),  # a checked act
        (FusedCall(box_add2, (a, b, out)), FusedCall(_momentum_lr, (a, out, v, lr, *c))),  # the variable is an addend
        (FusedCall(box_add2, (a, b, out)), FusedCall(_momentum_lr, (w, out, out, lr, *c))),  # momentum on the sum
        (FusedCall(box_add2, (a.astype(np.float64), b, out)), FusedCall(_momentum_lr, (w, out, v, lr, *c))),
    ]
    for first, second in refused:
        assert pairs.pair_call(first, second) is None, (first, second)
    # the all-gather's halves must be the update's gradient, in order, with no gap
    whole = np.empty(2 * n, F)
    s0, s1 = data((n,), 10), data((n,), 11)
    w2, v2, _ = state(2 * n, 12)
    swapped = FusedCall(box_copy2, (s0, whole[n:], s1, whole[:n]))
    assert pairs.pair_call(swapped, FusedCall(_momentum_lr, (w2, whole, v2, lr, *c))) is None
    gap = np.empty(2 * n + 1, F)
    split = FusedCall(box_copy2, (s0, gap[:n], s1, gap[n + 1:]))
    assert pairs.pair_call(split, FusedCall(_momentum_lr, (w2, gap[1:], v2, lr, *c))) is None


def test_a_boxing_copy_of_one_piece_then_a_copy_is_a_copy_twice() -> None:
    x = data((12,), 16)
    y1, z1, y2, z2 = (np.full(6, 5.0, F) for _ in range(4))
    box_copy1(x[6:], y1), copy_flat(y1, z1)
    call = pairs.pair_call(FusedCall(box_copy1, (x[6:], y2)), FusedCall(copy_flat, (y2.reshape(2, 3), z2)))
    assert call is not None and call.fn is pairs._copy_twice
    call.fn(*call.args)
    assert bits(y1, z1) == bits(y2, z2)


def test_a_pair_skips_one_act_sharing_no_byte_with_its_first() -> None:
    """A lane's learning-rate copy between a gradient's add and its update: it runs first, then the pair; an act in
    between that touches the add's arrays keeps the three apart."""
    n = 6
    a, b, out = data((n,), 13), data((n,), 14), np.empty(n, F)
    w, v, lr = state(n, 15)
    source = np.array([0.5], F)
    add = FusedCall(box_add2, (a, b, out))
    update = FusedCall(_momentum_lr, (w, out, v, lr, *constants(0, 0, 0)))
    lr_copy = FusedCall(box_copy2, (source, lr, source[:0], lr[:0]))
    made = segment_calls([(None, None, call) for call in (add, lr_copy, update)])  # type: ignore[misc]
    assert [(index, call.fn) for index, call in made] == [(1, box_copy2), (2, pairs._add2_momentum)]
    touching = FusedCall(box_copy2, (source, a[:1], source[:0], lr[:0]))  # writes an addend of the add
    made = segment_calls([(None, None, call) for call in (add, touching, update)])  # type: ignore[misc]
    assert [call.fn for _, call in made] == [box_add2, box_copy2, _momentum_lr]
    checked = FusedCall(box_copy2, lr_copy.args, True)
    made = segment_calls([(None, None, call) for call in (add, checked, update)])  # type: ignore[misc]
    assert [call.fn for _, call in made] == [box_add2, box_copy2, _momentum_lr]


def test_a_boxing_act_runs_on_its_readers_lane_and_next_to_its_one_reader() -> None:
    """Steps as byte ranges: 0 and 1 the devices' gradients (lanes 0, 1); 2 an add on lane 0 whose only reader is
    the update 4 on lane 1; 3 an add read by both lanes (5, 6, 7); 7 a long step on lane 1, ready when the update
    is: without ``follow`` it would run between the add and the update (the longer chain)."""
    ranges = [
        [(0, 10, True)], [(10, 20, True)],
        [(0, 5, False), (10, 15, False), (20, 25, True)],
        [(5, 10, False), (15, 20, False), (30, 35, True)],
        [(20, 25, True), (40, 45, True)],
        [(30, 35, False), (50, 51, True)], [(30, 35, False), (60, 61, True)],
        [(30, 35, False), (100, 9000, True)],
    ]
    lanes, follow = to_reader_lanes(ranges, [0, 1, 0, 0, 1, 0, 1, 1], [False, False, True, True] + [False] * 4)
    assert lanes == [0, 1, 1, 0, 1, 0, 1, 1] and follow == {2: 4}
    order = schedule_order(ranges, lanes, follow)
    assert order.index(4) == order.index(2) + 1  # the pair's two acts adjacent on lane 1
    assert order.index(2) > order.index(0) and order.index(2) > order.index(1)
    unfollowed = schedule_order(ranges, lanes)
    assert unfollowed.index(7) == unfollowed.index(2) + 1  # the test can fail: the longer chain goes first


@pytest.mark.parametrize("model, pair", [("mlp_sgd_momentum", "_copy2_momentum"),
                                         ("mlp_distributed_split", "_add2_momentum")])
def test_lanes_with_the_update_pairs_are_the_protocol_bit_for_bit(model: str, pair: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("flowlab.replay.layer.FUSE_AFTER", 3)
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "0")
    monkeypatch.setitem(MODELS, "mlp_distributed_split", build_split)
    protocol, replayed = lanes_run(model, 2, monkeypatch)
    train = [s for s in lane_schedules(replayed["layer"]) if any("train" in n for n in s.key)]
    sources = "".join(segment.source_path.read_text() for s in train for segment in set(s.lanes.segment_of.values()))
    for kernel in (pair, "_copy_twice"):  # the copy twice: a device's rows of the pushed x, then its Input copy
        assert f"pairs import {kernel} " in sources, f"the lanes no longer run {kernel}"
    assert_same(protocol, replayed)
    flow.clear_default_session()


def test_the_pushes_run_on_the_last_lane_and_the_pull_on_the_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller's lane runs the pull, the notifies and the system steps; the pushes' copies of the caller's arrays
    go to the last lane, which evens the lanes' work (the batch's copy was the caller's lane's surplus)."""
    from tests.helpers.lanes import batches, define_dp

    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    job = define_dp(2)
    for x, y in batches(3):
        job(x, y)
    schedules = [s for s in lane_schedules(flow.default_session().runtime.layer) if "dp_train" in s.key]
    assert schedules
    for schedule in schedules:
        lanes = schedule.lanes
        kinds = {i: a.task.exec_sequence[0].op_type for i, a in enumerate(lanes.actors) if a is not None}
        pushes = [i for i, kind in kinds.items() if kind == "foreign_input"]
        pulls = [i for i, kind in kinds.items() if kind == "foreign_output"]
        assert pushes and pulls
        assert {lanes.lane_of[i] for i in pushes} == {len(lanes.lanes) - 1}
        assert {lanes.lane_of[i] for i in pulls} == {0}
    flow.clear_default_session()
