"""Per-thread replay (flowlab/replay/lanes.py): a multi-device Plan's calls replayed as one lane per compute thread,
each on its own OS thread, are the protocol's bit for bit (the proof of tests/replay/test_replay_proof.py on 2 and 3
devices), every pair of steps of two lanes that touch the same bytes is ordered, and a failure in either lane is
reported by op, leaves the variables of the last completed step and never hangs."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowlab as flow
from flowlab.errors import KernelError
from flowlab.ops.registry import get_op_def
from flowlab.replay.fused import FUSE_AFTER
from tests.helpers.lanes import CALLS, batches, define_dp, lane_schedules, lanes_run
from tests.helpers.replay_proof import assert_same


@pytest.fixture(autouse=True)
def fuse_early(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("flowlab.replay.layer.FUSE_AFTER", 3)


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("model", ["mlp_sgd_momentum", "mlp_adam", "lenet", "watch_dropout"])
def test_lanes_replay_bit_for_bit(model: str, devices: int, monkeypatch: pytest.MonkeyPatch) -> None:
    protocol, replayed = lanes_run(model, devices, monkeypatch)
    layer = replayed["layer"]
    plan = flow.default_session().plan
    assert max(t.parallel_num for t in plan.tasks) == devices and any(t.is_boxing for t in plan.tasks)
    # the protocol ran the first call of each launch list, and every later one was replayed
    assert layer.protocol_calls == len(layer.schedules) and layer.replays >= CALLS - len(layer.schedules) - 3, layer
    train = [s for s in lane_schedules(layer) if any("train" in name for name in s.key)]
    assert train, f"no train schedule ran in lanes: {list(layer.schedules.values())}"
    assert all(len(s.lanes.lanes) == devices for s in train)
    assert any(s.lanes.segment_of for s in train), [(s.replays, s.fuse_tried) for s in train]
    assert_same(protocol, replayed)


def test_lanes_in_capture_order_replay_bit_for_bit_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the exchange-round order (``Lanes.reorder``), each lane in the capture's order: the same values."""
    from flowlab.replay.lanes import Lanes

    monkeypatch.setattr(Lanes, "reorder", False)
    protocol, replayed = lanes_run("mlp_sgd_momentum", 2, monkeypatch)
    assert all(s.lanes.order == sorted(s.lanes.order) for s in lane_schedules(replayed["layer"]))
    assert_same(protocol, replayed)


def test_steps_of_two_lanes_that_touch_the_same_bytes_are_ordered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The safety of lanes, checked independently of their interval arithmetic: for every pair of steps whose
    arrays share memory (np.shares_memory), one writing, the earlier in capture order happens before the later in
    every run of the lanes (on one lane: its order; on two: a chain of waits)."""
    from flowlab.replay.lanes import step_ranges

    _, replayed = lanes_run("mlp_sgd_momentum", 2, monkeypatch)
    train = [s for s in lane_schedules(replayed["layer"]) if any("train" in n for n in s.key)]
    assert len(train) >= 2  # the orders of the boxing registers (register_num 2)
    for schedule in train:
        lanes = schedule.lanes
        assert lanes.order != sorted(lanes.order)  # the exchange rounds moved steps: the reordering is checked
        arrays = []
        for step, actor in zip(schedule.steps, schedule.step_actors):
            if actor is None:
                arrays.append(([], []))
                continue
            ins, outs = step.args
            written_ins = any(w for _, _, w in step_ranges(step, actor)[:len(ins)]) and not actor.task.is_boxing
            # an update writes the inputs OneFlow declares mutable (its model and state), not its learning rate
            op = actor.task.exec_sequence[0]
            mutable = get_op_def(op.op_type).mutable_inputs
            args = [arg for arg, lbns in op.inputs.items() for _ in lbns]
            written = [a for a, arg in zip(ins, args) if written_ins and (mutable is None or arg in mutable)]
            arrays.append(([a for a in ins], [a for a in outs] + written))
        pairs = ordered = 0
        for then in range(len(arrays)):
            for first in range(then):
                (r1, w1), (r2, w2) = arrays[first], arrays[then]
                if any(np.shares_memory(a, b) for a in w1 for b in r2 + w2) or any(
                        np.shares_memory(a, b) for a in r1 for b in w2):
                    pairs += 1
                    assert lanes.happens_before(first, then), (schedule.step_actors[first], schedule.step_actors[then])
                    ordered += 1
        assert pairs > 10 and ordered == pairs  # the chains and the boxing exchanges: there is something to order


def dp_schedule():
    layer = flow.default_session().runtime.layer
    schedules = [s for s in lane_schedules(layer) if "dp_train" in s.key]
    assert schedules, layer
    return max(schedules, key=lambda s: s.replays)  # one per order of the boxing registers: the busiest


def test_a_lane_runs_on_its_own_os_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    job = define_dp(2)
    data = batches(FUSE_AFTER + 3)
    for x, y in data:
        job(x, y)
    layer = flow.default_session().runtime.layer
    schedules = [s for s in lane_schedules(layer) if "dp_train" in s.key]  # one per order of the boxing registers
    seen: dict[int, dict[int, set[str]]] = {}
    traces = []
    for index, schedule in enumerate(schedules):
        seen[index] = {0: set(), 1: set()}
        for number, lane in enumerate(schedule.lanes.lanes):
            program = []
            for fn, waits, signal in lane.program:
                def spy(fn=fn, number=number, index=index) -> None:
                    seen[index][number].add(threading.current_thread().name)
                    fn()
                program.append((spy, waits, signal))
            lane.program = program
        traces.append(schedule.lanes.record_next())
    job(*data[0])
    [used] = [index for index in seen if seen[index][0]]  # the schedule of the registers' order this call met
    schedule, trace = schedules[used], traces[used]
    assert seen[used][0] == {threading.current_thread().name} and seen[used][1] == {"flowlab-lane-1"}
    assert {lane for lane, *_ in trace} == {0, 1} and all(begin <= end for *_, begin, end, _ in trace)
    assert schedule.guarded == ("System-Train-TrainStep-dp_train",)  # every update follows every check
    rt = flow.default_session().runtime
    rt.stop_threads()  # the parked lane threads end; the next replay starts new ones
    assert not [t for t in threading.enumerate() if t.name.startswith("flowlab-lane")]
    job(*data[1])
    assert [w.thread.name for w in rt.threads.workers] == ["flowlab-lane-1"] and rt.layer.replays > FUSE_AFTER
    flow.clear_default_session()
    assert not [t for t in threading.enumerate() if t.name.startswith("flowlab-lane")]  # closed with the runtime


@pytest.mark.parametrize("bad_device", [0, 1])
@pytest.mark.parametrize("fused", [False, True])
def test_a_bad_label_in_one_lane_fails_the_call_by_op_and_training_goes_on(
        bad_device: int, fused: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A label out of range in one device's half: the call raises the op's error (whichever lane it is in, fused or
    act by act), no lane waits forever, the variables are the last completed step's, and the next calls give the
    values of a session that never saw the bad batch."""
    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    good = batches(FUSE_AFTER + 6)
    ref = define_dp(2)
    want = [ref(x, y) for x, y in good]
    want_vars = flow.get_all_variables()
    job = define_dp(2)
    first = FUSE_AFTER + 2 if fused else 3
    losses = [job(x, y) for x, y in good[:first]]
    schedule = dp_schedule()
    assert bool(schedule.lanes.segment_of) == fused
    before = flow.get_all_variables()
    x, y = good[first]
    bad = y.copy()
    bad[bad_device * 6 + 1] = 7  # in device bad_device's half of the batch
    with pytest.raises(KernelError, match=r"sparse_softmax_cross_entropy\w*' .* raised IndexError"):
        job(x, bad)
    for name, value in before.items():
        np.testing.assert_array_equal(flow.get_all_variables()[name], value, err_msg=name)
    losses += [job(x, y) for x, y in good[first:]]
    for k, (got, expected) in enumerate(zip(losses, want, strict=True)):
        np.testing.assert_array_equal(got, expected, err_msg=f"call {k}")
    for name, value in want_vars.items():
        np.testing.assert_array_equal(flow.get_all_variables()[name], value, err_msg=name)


def test_sigint_from_a_lane_is_delivered_after_the_call_and_training_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while lanes run (sent here from lane 1's thread): the call runs to its end, then KeyboardInterrupt
    reaches the caller, and the next calls go on in lanes (docs/failure-semantics.md)."""
    import os
    import signal

    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    job = define_dp(2)
    data = batches(FUSE_AFTER + 4)
    for x, y in data[: FUSE_AFTER + 2]:
        job(x, y)
    lane = dp_schedule().lanes.lanes[1]
    fn, waits, signal_lock = lane.program[0]
    fired: list[str] = []

    def kill() -> None:
        if not fired:
            fired.append(threading.current_thread().name)
            os.kill(os.getpid(), signal.SIGINT)
        fn()

    lane.program[0] = (kill, waits, signal_lock)
    replays = flow.default_session().runtime.layer.replays
    with pytest.raises(KeyboardInterrupt):
        job(*data[FUSE_AFTER + 2])
    assert fired == ["flowlab-lane-1"]
    assert flow.default_session().runtime.layer.replays == replays + 1  # the call completed first
    job(*data[FUSE_AFTER + 3])
