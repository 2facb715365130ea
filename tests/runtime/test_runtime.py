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


def is_subsequence(part: list[str], whole: list[str]) -> bool:
    it = iter(whole)
    return all(name in it for name in part)


def test_one_call_acts_in_protocol_order():
    rt = Runtime(pad_session().plan)
    out: list = []
    launch_call(rt, X, out)
    names = []
    while (event := rt.step()) is not None:
        names.append(event.actor_name)
    # The lock grants the push section first (FIFO among intersecting sections); the user section waits for
    # its release, and the pull section for the user section's. Inside a section, acts follow the data.
    push = ["System-Main-Tick_CriticalSection_1", "System-Push-Input_0-ForeignInput", "Input_0",
            "System-AutoTick-SinkTick", "System-Main-Esac_0", "System-Main-CallbackNotify_0"]
    user = ["System-Main-Tick_CriticalSection_0", "Input_0", "reflection_pad2d_0", "Return_0",
            "System-AutoTick-SinkTick", "System-Main-Esac_0", "System-Main-CallbackNotify_0"]
    pull = ["System-Main-Tick_CriticalSection_2", "Return_0", "System-Pull-Return_0-ForeignOutput",
            "System-AutoTick-SinkTick", "System-Main-Esac_0", "System-Main-CallbackNotify_0"]
    assert is_subsequence(push + user + pull, names)
    assert names.index("System-Main-Tick_CriticalSection_1") < names.index("System-Main-Tick_CriticalSection_0") \
        < names.index("System-Main-Tick_CriticalSection_2")
    # 3 acts each of WaitAndSendIds, Case, the ticks, Esac, CallbackNotify; 3 push + 4 user + 3 pull acts;
    # the lock acts whenever a request or a release arrives, granting when it can.
    lock_acts = names.count("System-Main-ReentrantLock_0")
    assert len(names) - lock_acts == 5 * 3 + 3 + 4 + 3
    assert 3 <= lock_acts <= 6
    np.testing.assert_array_equal(out[0], np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))


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


@pytest.mark.parametrize("register_num", [1, 2, 3])
def test_register_num_lets_a_producer_run_ahead(register_num):
    """A producer with register_num k acts k times ahead of a consumer that does not read, then blocks."""
    plan = with_register_num(pad_session().plan, "System-Main-WaitAndSendIds_0", register_num)
    rt = Runtime(plan)
    outs: list = []
    for k in range(3):
        launch_call(rt, X + k, outs)  # 9 job ids wait to be sent
    lock = rt.actor("System-Main-ReentrantLock_0")
    wait = rt.actor("System-Main-WaitAndSendIds_0")
    lock.state = "held back by the test"  # a consumer that does not act
    while rt.step() is not None:
        pass
    assert wait.act_id == register_num
    assert wait.blocked_reason().startswith("no free output register r")
    lock.state = "normal"
    rt.wake(lock)
    while rt.step() is not None:
        pass
    assert wait.act_id == 9
    for k, out in enumerate(outs):
        np.testing.assert_array_equal(out, np.pad(X + k, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))


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


def _grantable_reference(queue: list[int], held: set[int], intersecting: dict[int, set[int]]) -> bool:
    """OneFlow's rule from scratch: some request conflicts with no held section and with no older request."""
    for pos, section in enumerate(queue):
        conflicts = {section} | intersecting[section]
        if not conflicts & held and not any(conflicts & ({older} | intersecting[older]) for older in queue[:pos]):
            return True
    return False


def test_the_lock_is_ready_exactly_when_a_request_or_release_waits_or_a_grant_is_possible():
    """The lock works out what it can grant once per act and keeps it (is_ready only reads it): after every act of
    interleaved calls of two jobs (push sections disjoint from each other, each intersecting its job's), its
    readiness equals the rule worked out from scratch on its queue and held sections."""
    @flow.global_function()
    def a(x: tp.Numpy.Placeholder((1, 1, 2, 2))) -> tp.Numpy:
        return flow.zero_pad2d(x, padding=1)

    @flow.global_function()
    def b(x: tp.Numpy.Placeholder((1, 1, 2, 2))) -> tp.Numpy:
        return flow.zero_pad2d(x, padding=2)

    a(np.zeros((1, 1, 2, 2), np.float32))
    plan = flow.default_session().plan
    rt = Runtime(plan)
    lock = rt.actor("System-Main-ReentrantLock_0")
    op = lock.task.exec_sequence[0]
    intersecting = {i: set(others) for i, others in enumerate(op.attrs["lock_id2intersecting_lock_ids"])}
    assert any(intersecting.values()) and not all(len(v) == len(intersecting) - 1 for v in intersecting.values())
    one = np.ones((1, 1, 2, 2), np.float32)
    for k in range(2):
        for name in ("System-Push-Input_0", "System-Push-Input_1", "a", "b", "System-Pull-Return_0",
                     "System-Pull-Return_1"):
            rt.launch(JobInstance(name, push_array=one * k if "Push" in name else None))
    acts, blocked = 0, 0
    while rt.step() is not None:
        acts += 1
        waiting = bool(lock.readable[lock.end[0]]) or bool(lock.readable[lock.start[0]])
        can_grant = _grantable_reference(list(lock.queue), set(lock.held), intersecting)
        blocked += bool(lock.queue) and not can_grant
        assert lock.is_ready() == (waiting or (can_grant and bool(lock.writable[lock.out[0]]))), \
            f"after act {acts}: queue {list(lock.queue)}, held {sorted(lock.held)}"
    assert acts > 60 and blocked > 5 and not lock.queue and not lock.held


def test_main_job_registers_read_their_ids_through_the_arrays_bytes():
    """The main job's actors read section ids through ``Regst.ids``, a view of the register's array: a value
    written into the array (as replay's settle does) is what they read, and what they write is in the array."""
    rt = Runtime(pad_session().plan)
    for regsts in rt.regsts.values():
        for regst in regsts:
            if regst.first is not None and regst.first.dtype.kind in "iu":
                regst.first[0] = 7
                assert regst.ids[0] == 7 and type(regst.ids[0]) is int
                regst.ids[0] = 2
                assert int(regst.first[0]) == 2
    out: list = []
    launch_call(rt, X, out)
    while rt.step() is not None:
        pass
    np.testing.assert_array_equal(out[0], np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))


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


def test_a_call_run_silently_leaves_the_same_state_as_one_stepped_with_events():
    """run_protocol's loop with no sink (no events) and with a subscriber (a sink: every act's event) make the
    same acts in the same order and leave the same protocol state, call after call, registers rotating included
    (register_num 2 on the pad)."""
    from flowlab.replay.capture import fingerprint

    plan = pad_session().plan
    silent, stepped = Runtime(plan), Runtime(plan)
    order: list[int] = []
    stepped.hooks.append(lambda event: order.append(event.actor_id))
    silent_order: list[int] = []  # the acts that run a kernel, in order
    for actor in silent.actors.values():
        if actor.kernel is not None:
            counted = (lambda key, k: lambda ins, outs: (silent_order.append(key), k(ins, outs)))(actor.actor_id,
                                                                                                  actor.fn)
            actor.kernel = actor.kernel.wrap(counted)
    for call in range(3):
        outs: list[list] = [[], []]
        for rt, out in ((silent, outs[0]), (stepped, outs[1])):
            x = X + call
            rt.run_protocol([JobInstance("System-Push-Input_0", push_array=x), JobInstance("pad_Job"),
                             JobInstance("System-Pull-Return_0", on_pull=out.append)])
        np.testing.assert_array_equal(outs[0][0], outs[1][0])
        np.testing.assert_array_equal(outs[0][0], np.pad(X + call, ((0, 0), (0, 0), (1, 1), (1, 1)), "reflect"))
        assert fingerprint(silent) == fingerprint(stepped)
        assert silent._seq == stepped._seq
        assert [(r.act_id, r.reading_cnt) for regs in silent.regsts.values() for r in regs] == \
               [(r.act_id, r.reading_cnt) for regs in stepped.regsts.values() for r in regs]
        assert {a.actor_id: a.act_id for a in silent.actors.values()} == \
               {a.actor_id: a.act_id for a in stepped.actors.values()}
    kernel_acts = [key for key in order if stepped.actors[key].kernel is not None]
    assert silent_order == kernel_acts and len(kernel_acts) > 20


def test_a_queued_actor_stays_ready_until_it_acts():
    """The invariant Runtime.acts relies on to skip re-checking a popped actor: an actor is queued only
    when ready, and nothing but its own act takes its readiness away (registers only arrive in its consumed slots
    and only return to its produced ones; the main job's actors' own conditions change only in their acts). And
    the converse, which the act loop's readiness shortcuts (ready_slots, ready_on_arrival) must keep: every ready
    actor is queued. Checked after every act of a pad call and of an MLP train step with momentum, two calls
    queued at once."""
    from tests.helpers.replay_models import _xy, build_mlp

    def check(rt: Runtime) -> int:
        acts = 0
        while rt.step(False) is not None:
            acts += 1
            for actor in rt.ready:
                assert actor.queued and actor.is_ready(), f"{actor.name} is queued but not ready"
            for actor in rt.actors.values():  # and the converse: the act loop's readiness shortcuts miss no one
                assert actor.queued or not actor.is_ready(), f"{actor.name} is ready but not queued"
        return acts

    rt = Runtime(pad_session().plan)
    outs: list = []
    launch_call(rt, X, outs)
    launch_call(rt, X * 10, outs)
    assert check(rt) > 50 and len(outs) == 2

    flow.clear_default_session()
    build_mlp(lambda: flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9),
              [])(0)
    session = flow.default_session()
    names = session.function_descs["train_job"].launch_names  # push x, push y, the job, pull the loss
    rt = Runtime(session.plan)
    losses: list = []
    for k in range(2):
        x, y = _xy(k)
        for instance in (JobInstance(names[0], push_array=x), JobInstance(names[1], push_array=y),
                         JobInstance(names[2]), JobInstance(names[3], on_pull=losses.append)):
            rt.launch(instance)
    assert check(rt) > 100 and len(losses) == 2
