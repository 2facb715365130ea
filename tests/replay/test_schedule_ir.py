"""The Schedule IR (flowlab/ir/schedule.py): a captured call as frozen data that prints one step per line,
round-trips through JSON, is verified against its Plan, and says what protocol stepping does in that call."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.ir import Schedule, ScheduleError, ScheduleStep, check_schedule, encode_task_id, to_json
from flowlab.runtime.executor import ProtocolExecutor

CALL_KEY = ("System-Push-Input_0", "mlp", "System-Pull-Return_0")


def mlp_session(calls: int = 3) -> tuple[Any, Any]:
    """The seed MLP layer (dense + relu) as an eval job, called ``calls`` times; -> (job function, session)."""
    flow.clear_default_session()

    @flow.global_function()
    def mlp(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return flow.layers.dense(x, 2, activation=flow.nn.relu, name="hidden")

    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    for _ in range(calls):
        mlp(x)
    return mlp, flow.default_session()


def call_schedule(session: Any) -> Schedule:
    (captured,) = [c for c in session.runtime.layer.schedules.values() if c.key == CALL_KEY]
    return captured.ir


def test_a_call_prints_one_step_per_line() -> None:
    _, session = mlp_session()
    text = str(call_schedule(session)).splitlines()
    # Checked by hand against print(session.plan): the push's ForeignInput fills the Input op's register, the
    # push's section is notified, the dense layer's matmul, bias_add and relu run on thread 0, the Return op
    # hands its register to the pull's ForeignOutput, and each of the three jobs' sections is notified once.
    assert text[0] == ("schedule System-Push-Input_0 + mlp + System-Pull-Return_0: 35 acts, 7 kernel steps, "
                       "3 notifies")
    assert text[1:11] == [
        "  #0 0:3:0 ForeignInput System-Push-Input_0-ForeignInput [foreign_input] reads r40#0 writes r10#0",
        "  #1 0:0:7 NormalForward Input_0 [output] reads r10#0 writes r11#0 r12#0",
        "  #2 0:6:0 CallbackNotify System-Main-CallbackNotify_0 notifies cs 1",
        "  #3 0:0:2 NormalForward hidden-matmul [matmul] reads r0#0 r1#0 writes r2#0 r9#0",
        "  #4 0:0:4 NormalForward hidden-bias_add [bias_add] reads r2#0 r3#0 writes r4#0",
        "  #5 0:0:5 NormalForward hidden-activation [relu] reads r4#0 writes r5#0",
        "  #6 0:0:6 NormalForward Return_0 [return] reads r5#0 writes r6#0 r7#0",
        "  #7 0:6:0 CallbackNotify System-Main-CallbackNotify_0 notifies cs 0",
        "  #8 0:4:0 ForeignOutput System-Pull-Return_0-ForeignOutput [foreign_output] reads r13#0 writes r14#0",
        "  #9 0:6:0 CallbackNotify System-Main-CallbackNotify_0 notifies cs 2",
    ]
    assert text[11] == "delta:"
    assert text[12].startswith("  acts: 0:0:0+1 ")
    assert "  ids: r30#0=2 r31#0=0 r32#0=1 r33#0=2 r37#0=2" in text  # the main job's actors' ids for this call
    plan = session.plan
    names = {t.task_id: t.name for t in plan.tasks}
    assert names[plan.regst_descs[2].producer_task_id] == "hidden-matmul"  # r2: matmul's out, bias_add's in
    assert 2 in plan.task(names_to_id(plan, "hidden-bias_add")).consumed_ids


def names_to_id(plan: Any, name: str) -> int:
    return next(t.task_id for t in plan.tasks if t.name == name)


def test_json_round_trip_and_frozen() -> None:
    _, session = mlp_session(calls=12)  # long enough to fuse: the segments are part of the IR
    (captured,) = [c for c in session.runtime.layer.schedules.values() if c.key == CALL_KEY]
    schedule = captured.ir
    assert Schedule.from_json(schedule.to_json()) == schedule
    assert Schedule.from_json(schedule.to_json(indent=1)).steps[3] == schedule.steps[3]
    with pytest.raises(dataclasses.FrozenInstanceError):
        schedule.steps[0].task_id = 1  # type: ignore[misc]
    if captured.fused is not None:  # fused (tiered kernels settle by the second call): the segment is shown
        assert schedule.segments and "segments:" in str(schedule)
        assert all(not schedule.steps[i].is_notify for segment in schedule.segments for i in segment)
    other = dataclasses.replace(schedule, key=("mlp",))
    assert Schedule.from_json(other.to_json()) != schedule
    with pytest.raises(ValueError, match="expected a Schedule"):
        Schedule.from_json(to_json(session.plan.mem_blocks[0]))


def test_check_schedule_accepts_captured_calls() -> None:
    _, session = mlp_session(calls=12)
    for captured in session.runtime.layer.schedules.values():
        check_schedule(captured.ir, session.plan)


def _with_step(schedule: Schedule, index: int, **changes: Any) -> Schedule:
    steps = list(schedule.steps)
    steps[index] = dataclasses.replace(steps[index], **changes)
    return dataclasses.replace(schedule, steps=tuple(steps))


def test_check_schedule_names_the_step_of_a_corruption() -> None:
    _, session = mlp_session()
    plan, schedule = session.plan, call_schedule(session)
    with pytest.raises(ScheduleError, match=r"step #4 \(0:7:99 hidden-bias_add\): task \d+ is not in the Plan"):
        check_schedule(_with_step(schedule, 4, task_id=encode_task_id(0, 7, 99)), plan)
    with pytest.raises(ScheduleError, match=r"step #5 \(0:0:5 hidden-activation\): reads r2#0, which task "
                                            r"hidden-activation does not consume \(it consumes r4\)"):
        check_schedule(_with_step(schedule, 5, reads=((2, 0),)), plan)
    with pytest.raises(ScheduleError, match=r"step #3 .*: writes r2#5, but r2 has 1 registers"):
        check_schedule(_with_step(schedule, 3, writes=((2, 5), (9, 0))), plan)
    with pytest.raises(ScheduleError, match=r"step #2 .*notifies critical section 9"):
        check_schedule(_with_step(schedule, 2, section=9), plan)
    matmul = schedule.steps[3].task_id
    acts = tuple((t, n + 1 if t == matmul else n) for t, n in schedule.delta.actor_acts)
    wrong = dataclasses.replace(schedule, delta=dataclasses.replace(schedule.delta, actor_acts=acts))
    with pytest.raises(ScheduleError, match=r"step #3 \(0:0:2 hidden-matmul\): the task has 1 steps \(#3\) but "
                                            r"the delta counts 2 acts"):
        check_schedule(wrong, plan)
    offsets = ((999, 0, matmul, 0), *schedule.delta.regst_offsets)
    with pytest.raises(ScheduleError, match=r"delta act ids: register r999#0 is not in the Plan"):
        check_schedule(dataclasses.replace(schedule, delta=dataclasses.replace(schedule.delta,
                                                                               regst_offsets=offsets)), plan)
    with pytest.raises(ScheduleError, match=r"segment 1: step #3 is already in segment 0"):
        check_schedule(schedule.lowered(segments=((3, 4), (3, 5))), plan)
    with pytest.raises(ScheduleError, match=r"lanes: step #1 is in no lane"):
        check_schedule(schedule.lowered(lanes=(((0, 0), (0, *range(2, 10))),)), plan)


@pytest.mark.parametrize("devices", [1, 2])
def test_the_schedule_is_what_protocol_stepping_does(devices: int) -> None:
    """The same call stepped by the protocol executor with a subscriber, from the state a schedule starts at: its
    kernel acts are the schedule's steps, actor for actor and register for register, and each actor acts as often as
    the delta says. On 2 devices (lanes) a SliceBoxing's registers rotate, so calls alternate schedules: the one for
    the state the runtime is in is compared."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def mlp(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            return flow.layers.dense(x, 2, activation=flow.nn.relu, name="hidden")

    x = np.ones((4, 3), np.float32)
    for _ in range(3):
        mlp(x)
    session = flow.default_session()
    rt, layer = session.runtime, session.runtime.layer
    rt.observe()  # settled: the runtime's state is known, and a schedule starts there
    captured = layer.schedule_for(CALL_KEY)
    assert captured is not None
    schedule = captured.ir
    check_schedule(schedule, session.plan)
    events: list[Any] = []
    rt.hooks.append(events.append)
    replay, session.executor = session.executor, ProtocolExecutor(rt)
    try:
        replays = layer.replays
        mlp(x)
        assert layer.replays == replays  # the protocol ran it
    finally:
        rt.hooks.remove(events.append)
        session.executor = replay
    kernel_acts = [e for e in events if rt.actors[e.actor_id].kernel is not None]
    assert [e.actor_id for e in kernel_acts] == [s.task_id for s in schedule.steps]
    assert [(e.read, e.written) for e, s in zip(kernel_acts, schedule.steps) if not s.is_notify] == \
        [(s.reads, s.writes) for s in schedule.kernel_steps]
    assert Counter(e.actor_id for e in events) == Counter(dict(schedule.delta.actor_acts))
    assert len(events) == schedule.acts
    assert bool(schedule.lanes) == (devices == 2)


def test_a_step_prints_without_a_plan() -> None:
    step = ScheduleStep(encode_task_id(0, 1, 2), "relu1", "relu", "NormalForward", 0, 1, ((3, 0),),
                        ((4, 1),))
    assert str(step) == "0:1:2 NormalForward relu1 [relu] reads r3#0 writes r4#1"
    assert ScheduleStep(5, "n", "", "CallbackNotify", 0, 6, section=2).is_notify
