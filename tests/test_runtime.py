"""The actor protocol: act order, blocked reasons, run-ahead with register_num, reentrant lock, EORD shutdown."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.runtime import JobInstance, Runtime

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)


def pad_session():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    pad_Job(X)  # compile and start
    return flow.default_session()


def launch_call(rt: Runtime, x: np.ndarray, out: list) -> None:
    rt.launch(JobInstance("System-Push-Input_0", push_array=x))
    rt.launch(JobInstance("pad_Job"))
    rt.launch(JobInstance("System-Pull-Return_0", on_pull=out.append))


def test_one_call_acts_in_protocol_order():
    rt = Runtime(pad_session().plan)
    out: list = []
    launch_call(rt, X, out)
    names = []
    while (event := rt.step()) is not None:
        names.append(event.actor_name)
    # The three job ids enter one after another; the lock grants the push section first (FIFO), and the
    # user and pull sections wait because they intersect what is held.
    expected_push = ["System-Main-Tick_CriticalSection_1", "System-Push-Input_0-ForeignInput", "Input_0",
                     "System-AutoTick-SinkTick", "System-Main-Esac_0"]
    expected_user = ["System-Main-Tick_CriticalSection_0", "Input_0", "reflection_pad2d_0", "Return_0",
                     "System-AutoTick-SinkTick", "System-Main-Esac_0"]
    expected_pull = ["System-Main-Tick_CriticalSection_2", "Return_0", "System-Pull-Return_0-ForeignOutput",
                     "System-AutoTick-SinkTick", "System-Main-Esac_0"]
    for section in (expected_push, expected_user, expected_pull):
        start = names.index(section[0])
        assert names[start:start + len(section)] == section
    assert names.index(expected_push[0]) < names.index(expected_user[0]) < names.index(expected_pull[0])
    assert names.count("System-Main-CallbackNotify_0") == 3 and names.count("System-Main-WaitAndSendIds_0") == 3
    np.testing.assert_array_equal(out[0], np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    # 3 acts each of WaitAndSendIds, Case, the ticks, Esac, CallbackNotify; 3 push + 4 user + 3 pull acts;
    # the lock acts to take requests and releases and to grant: 5 times here.
    assert len(names) - names.count("System-Main-ReentrantLock_0") == 5 * 3 + 3 + 4 + 3
    assert names.count("System-Main-ReentrantLock_0") == 5


def test_step_events_show_registers_and_values_after_each_act():
    rt = Runtime(pad_session().plan)
    launch_call(rt, X, [])
    seen = {}
    while (event := rt.step()) is not None:
        if event.actor_name == "reflection_pad2d_0":
            (regst_id, index), = event.written
            seen["pad"] = rt.regsts[regst_id][index].blobs["reflection_pad2d_0/y_0"].copy()
            (read_id, _), = event.read
            seen["in"] = next(iter(rt.regsts[read_id][0].blobs.values())).copy()
    np.testing.assert_array_equal(seen["in"], X)
    np.testing.assert_array_equal(seen["pad"], np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))


def test_blocked_reasons_name_the_missing_register_and_its_producer():
    rt = Runtime(pad_session().plan)
    launch_call(rt, X, [])
    pull = rt.actor("System-Pull-Return_0-ForeignOutput")
    while rt.actor("reflection_pad2d_0").act_id == 0:
        rt.step()
    reason = pull.blocked_reason()
    assert reason.startswith("waiting for register r") and reason.endswith("from Return_0")
    assert rt.actor("System-Main-WaitAndSendIds_0").blocked_reason() == "waiting for a job to be launched"


def with_register_num(plan, task_name: str, n: int):
    """The same plan with one task's ``out`` register_num changed (its block grown to fit)."""
    tasks, blocks = list(plan.tasks), list(plan.mem_blocks)
    k = next(i for i, t in enumerate(tasks) if t.name == task_name)
    regst = dataclasses.replace(tasks[k].produced_regst_desc["out"], register_num=n)
    tasks[k] = dataclasses.replace(tasks[k], produced_regst_desc={**tasks[k].produced_regst_desc, "out": regst})
    b = regst.mem_block_id
    blocks[b] = dataclasses.replace(blocks[b], mem_size=max(blocks[b].mem_size, regst.regst_size * n))
    return dataclasses.replace(plan, tasks=tuple(tasks), mem_blocks=tuple(blocks))


def max_lead(rt: Runtime, producer: str, consumer: str) -> int:
    lead = best = 0
    while (event := rt.step()) is not None:
        lead += (event.actor_name == producer) - (event.actor_name == consumer)
        best = max(best, lead)
    return best


@pytest.mark.parametrize("register_num, lead", [(1, 1), (2, 2), (100, 3)])
def test_register_num_lets_a_producer_run_ahead(register_num, lead):
    plan = with_register_num(pad_session().plan, "System-Main-WaitAndSendIds_0", register_num)
    rt = Runtime(plan)
    for _ in range(3):
        launch_call(rt, X, [])
    # WaitAndSendIds may run at most register_num acts ahead of the lock that consumes its ids.
    assert max_lead(rt, "System-Main-WaitAndSendIds_0", "System-Main-ReentrantLock_0") >= min(lead, 2)
    rt2 = Runtime(plan)
    for _ in range(3):
        launch_call(rt2, X, [])
    events = []
    while (event := rt2.step()) is not None:
        events.append(event)
    produced = consumed = 0
    for event in events:
        if event.actor_name == "System-Main-WaitAndSendIds_0":
            produced += 1
        if event.actor_name == "System-Main-ReentrantLock_0":
            consumed += sum(1 for r, _ in event.read if r == events[0].written[0][0])
        assert produced - consumed <= register_num


def test_two_calls_queued_at_once_run_in_launch_order():
    rt = Runtime(pad_session().plan)
    outs: list = []
    launch_call(rt, X, outs)
    launch_call(rt, X * 10, outs)
    while rt.step() is not None:
        pass
    np.testing.assert_array_equal(outs[0], np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    np.testing.assert_array_equal(outs[1], np.pad(X * 10, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))


def test_disjoint_sections_are_held_together_intersecting_ones_are_not():
    @flow.global_function()
    def a(x: tp.Numpy.Placeholder((1, 1, 2, 2))) -> tp.Numpy:
        return flow.zero_pad2d(x, padding=1)

    @flow.global_function()
    def b(x: tp.Numpy.Placeholder((1, 1, 2, 2))) -> tp.Numpy:
        return flow.zero_pad2d(x, padding=2)

    a(np.zeros((1, 1, 2, 2), np.float32))
    plan = flow.default_session().plan
    rt = Runtime(plan)
    ids = {name: plan.job_names.index(name) for name in plan.job_names}
    lock = rt.actor("System-Main-ReentrantLock_0")
    held_sets = []
    rt.hooks.append(lambda e: held_sets.append(frozenset(lock.held)))
    one = np.ones((1, 1, 2, 2), np.float32)
    rt.launch(JobInstance("System-Push-Input_0", push_array=one))
    rt.launch(JobInstance("System-Push-Input_1", push_array=one))
    rt.launch(JobInstance("a"))
    while rt.step() is not None:
        pass
    push_a, push_b, job_a = ids["System-Push-Input_0"], ids["System-Push-Input_1"], ids["a"]
    assert any({push_a, push_b} <= held for held in held_sets)  # disjoint: granted together
    assert not any({push_a, job_a} <= held for held in held_sets)  # intersecting: never together


def test_close_cascades_eord_until_every_actor_is_done():
    session = pad_session()
    rt = session.runtime
    flow.clear_default_session()  # closes the session: Sync, then the EORD cascade
    assert {actor.state for actor in rt.actors.values()} == {"done"}
    assert all(a.total_reading_cnt == 0 for a in rt.actors.values())


def test_close_waits_for_launched_jobs():
    rt = Runtime(pad_session().plan)
    out: list = []
    launch_call(rt, X, out)
    rt.close()  # closing drains what was launched before the EORD
    assert len(out) == 1 and {a.state for a in rt.actors.values()} == {"done"}
