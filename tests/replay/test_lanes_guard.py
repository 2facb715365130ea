"""The call guard of fused lanes (replay/lanes.py ``Lanes.guarded``): a failing replayed call leaves every variable
and the train-step counter as before it, wherever the failure happens, and whatever the hand-offs made of each
lane (segments, lone direct calls, Python steps). The class: every point of a lane's program that can raise (a
Python step's kernel, a segment's fetch or allocation at its start, a checked call inside a segment) is made to
raise in turn during a replayed call of a 2-device data-parallel train job."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import flowlab as flow
from flowlab.call_guard import task_writes
from flowlab.errors import KernelError
from flowlab.replay.fused import Segment, fused_call_of
from flowlab.replay.lanes import Lanes
from tests.helpers.lanes import batches, define_dp

STEP = "System-Train-TrainStep-dp_train"


@pytest.fixture(autouse=True)
def lanes_fused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    monkeypatch.setattr("flowlab.replay.layer.FUSE_AFTER", 3)  # both boxing-register orders fuse early


def fused_lane_schedules() -> list[Any]:
    layer = flow.default_session().runtime.layer
    return [s for s in layer.schedules.values() if "dp_train" in s.key and s.lanes is not None and s.lanes.segment_of]


def raising_points(schedule: Any) -> Iterator[tuple[str, str, int, int, int]]:
    """(kind, op, lane, entry, act) for each point of the lanes' programs that can raise, read off what each entry
    runs (independently of ``Lanes.guarded``): a Python step of a kernel (not a boxing copy or add, not a notify),
    a segment whose start fetches a pushed array or allocates a pulled one, a checked call inside a segment."""
    for number, lane in enumerate(schedule.lanes.lanes):
        for entry, ((fn, _, _), index) in enumerate(zip(lane.program, lane.indices)):
            actor = schedule.step_actors[index]
            if isinstance(fn, Segment):
                if fn.fetches:
                    yield "fetch", fn.actors[0].name, number, entry, 0
                for act, (step, member) in enumerate(zip(fn.steps, fn.actors)):
                    if fused_call_of(member, step).checked:
                        yield "checked", member.name, number, entry, act
            elif fn is schedule.steps[index] and actor is not None and not actor.task.is_boxing:
                yield "kernel", actor.name, number, entry, 0


def failing(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, then an error: what it wrote stays written (the harder case for the guard)."""
    def fail(*args: Any) -> Any:
        fn(*args)
        raise RuntimeError("injected failure")
    return fail


def inject(schedule: Any, kind: str, lane: int, entry: int, act: int) -> Callable[[], None]:
    """Make the point raise in the schedule's next replay; returns what puts it back."""
    program = schedule.lanes.lanes[lane].program
    fn, waits, signal = program[entry]
    if kind == "kernel":
        program[entry] = (failing(fn), waits, signal)
        return lambda: program.__setitem__(entry, (fn, waits, signal))
    if kind == "fetch":  # the first fetch (a pushed array) or allocation (a pulled one) raises, before any act
        fetches = fn.fetches

        def broken() -> np.ndarray:
            raise MemoryError("injected failure")

        fn.fetches = (broken, *fetches[1:])
        return lambda: setattr(fn, "fetches", fetches)
    compiled, step = fn.fn, fn.steps[act]  # a checked call: the segment's acts one by one, the checked one raising
    fn.fn, fn.steps[act] = None, failing(step)

    def restore() -> None:
        fn.fn, fn.steps[act] = compiled, step
    return restore


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the lanes fuse (else there would be nothing to test)
@pytest.mark.parametrize("reorder", [True, False], ids=["lane_order", "capture_order"])
def test_each_point_that_can_raise_in_fused_lanes_leaves_the_variables_as_before_the_call(
        reorder: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """In either order of each lane's steps (a simulated run's, which pulls the loss before the updates, or the
    capture's, where lane 0 pulls it after them, as one step between two hand-offs)."""
    monkeypatch.setattr(Lanes, "reorder", reorder)
    data = batches(400)
    job = define_dp(2)
    good: list[tuple[np.ndarray, np.ndarray]] = []
    losses = []
    feed = iter(data)

    def call_good() -> None:
        x, y = next(feed)
        good.append((x, y))
        losses.append(job(x, y))

    for _ in range(12):
        call_good()
    points = {(kind, op): (lane, entry, act) for s in fused_lane_schedules() for kind, op, lane, entry, act in
              raising_points(s)}
    kinds = {kind for kind, _ in points}
    assert kinds == {"kernel", "fetch", "checked"} or kinds == {"kernel", "checked"}, points
    ops = {op for _, op in points}
    assert any("ForeignOutput" in op for op in ops) and any("ForeignInput" in op for op in ops), ops
    key = fused_lane_schedules()[0].key
    failed = []
    for (kind, op), _ in sorted(points.items()):
        # a failed call leaves a new runtime: good calls until it replays a fused schedule that has this point
        here: list[tuple[str, str, int, int, int]] = []
        for _ in range(40):
            layer = flow.default_session().runtime.layer
            schedule = layer.schedule_for(key)
            if schedule is not None and schedule.lanes is not None and schedule.lanes.segment_of:
                here = [p for p in raising_points(schedule) if p[:2] == (kind, op)]
                if here:
                    break
            call_good()
        assert here, f"no fused replay met {kind} {op}"
        before = flow.get_all_variables()
        assert STEP in before
        restore = inject(schedule, *here[0][:1], *here[0][2:])
        try:  # the injected error lives only in the lanes' program: raised, it was their replay that failed
            with pytest.raises(KernelError, match="injected failure"):
                job(*data[-1])
        finally:
            restore()
        # the failed call's runtime is thrown away with its parked lane threads joined (none leaks per failure)
        assert not [t.name for t in threading.enumerate() if t.name.startswith("flowlab-lane")], (kind, op)
        after = flow.get_all_variables()
        wrong = [name for name, value in before.items() if not np.array_equal(after[name], value)]
        if wrong:
            failed.append(f"{kind} {op}: {wrong}")
        call_good()
    assert not failed, "a failing replayed call left variables changed:\n" + "\n".join(failed)

    final = flow.get_all_variables()
    # the good calls give the numbers of a session that never saw the failing calls: bit for bit on 2 devices,
    # and the one-device numbers up to the order of the gradient's sums
    for devices in (2, 1):
        ref = define_dp(devices)
        want = [ref(x, y) for x, y in good]
        for k, (got, expected) in enumerate(zip(losses, want, strict=True)):
            if devices == 2:
                np.testing.assert_array_equal(got, expected, err_msg=f"call {k}")
            else:
                np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6, err_msg=f"call {k}")
        for name, value in flow.get_all_variables().items():
            if devices == 2:
                np.testing.assert_array_equal(final[name], value, err_msg=name)
            else:
                np.testing.assert_allclose(final[name], value, rtol=1e-4, atol=1e-6, err_msg=name)


def test_a_lone_pull_between_two_hand_offs_counts_as_a_step_that_can_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loss's pull, a lone step of lane 0 between two hand-offs placed after optimizer updates of that lane
    (in the capture's order), runs as its Python kernel (it copies the loss out, allocating): it can raise, so
    every variable those updates write is guarded, as is any whose update is not ordered after it."""
    monkeypatch.setattr(Lanes, "reorder", False)
    job = define_dp(2)
    for x, y in batches(12):
        job(x, y)
    schedules = fused_lane_schedules()
    assert schedules
    writes = task_writes(flow.default_session().plan)
    seen = 0
    for schedule in schedules:
        lanes = schedule.lanes
        [pull] = [i for i, a in enumerate(schedule.step_actors) if a is not None and a.name.endswith("ForeignOutput")]
        lane = lanes.lanes[lanes.lane_of[pull]]
        fn = lane.program[lane.indices.index(pull)][0]
        assert fn is schedule.steps[pull]  # run as its Python kernel: neither in a segment nor a direct call
        assert pull in lanes.raising
        before = {name for step, actor, *_ in lane.steps[: lanes.positions[pull]] if actor is not None
                  for name in writes.get(actor.task.task_id, ())}
        seen += bool(before - {STEP})
        assert before <= set(schedule.guarded), before - set(schedule.guarded)
    assert seen, "no lane placed its pull after an update: the case is not tested"


def test_lanes_run_the_pull_before_the_updates_so_the_guard_is_the_step_counter() -> None:
    """The simulated run's order (replay/lane_order.py) runs a step touching the runtime (a push, a pull, a
    notify) first among those ready: lane 0 pulls the loss before the optimizer's updates, every update follows
    every point that can raise, and a call copies only the step counter (set before the label checks)."""
    job = define_dp(2)
    for x, y in batches(12):
        job(x, y)
    for schedule in fused_lane_schedules():
        lanes = schedule.lanes
        [pull] = [i for i, a in enumerate(schedule.step_actors) if a is not None and a.name.endswith("ForeignOutput")]
        updates = [i for i, a in enumerate(schedule.step_actors) if a is not None and a.name.endswith("_optimizer")]
        assert len(updates) == 8 and all(lanes.happens_before(pull, u) for u in updates)
        assert schedule.guarded == (STEP,)
