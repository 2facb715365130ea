"""Steady-state replay: a job call's acts, captured once through the actor protocol, then replayed.

The scheduler is deterministic: from the same protocol state and the same launches it performs the same acts in
the same order, on the same registers. So a call of a job function (push jobs, the user job, pull jobs and the
main job's critical sections) from an idle runtime to an idle runtime is a fixed transition: from protocol state
S, with these launches, the runtime performs this list of effects (the kernels it ran on their register arrays,
the section ids the main job's actors wrote, the job ids WaitAndSendIds took) and ends in state S'. ``capture``
records the transition while the protocol runs the call; ``replay`` performs exactly that list when the runtime is
known to be in S again, moves to S' and advances the act counters as the acts would have, so a later ``step()``
(the debugger) finds the runtime as the protocol would have left it. States are usually a short cycle (the
The wait-ids source's 100 registers are the exception: a call rotates them by its section count, so its
transitions record them by position from the front of the source's free list, and the state leaves the
rotation out; otherwise a loop mixing calls with 3 and 4 sections would cycle through 100 states.

This is CUDA Graphs' capture/replay for the actor runtime: the protocol decided the schedule once, and every
kernel of the push, user, pull and main jobs still runs on every call. A replay is refused (and the protocol runs)
whenever anything could make the schedule differ: a hook or the debugger attached, an act or launch since the last
known fixed point, queued work, or a closed runtime. ``FLOWLAB_REPLAY=0`` turns it off.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .main_actors import ReentrantLockActor, WaitAndSendIdsActor

if TYPE_CHECKING:
    from .actor import Actor
    from .regst import Regst
    from .runtime import Runtime

CAPTURE_TRIES = 2  # calls of one launch list that may fail to end idle before it is never captured again
MAX_TRANSITIONS = 512  # captured transitions kept per runtime


def replay_enabled() -> bool:
    return os.environ.get("FLOWLAB_REPLAY", "1") not in ("0", "false", "off")


# One replayed effect: a kernel call (fn, ins, outs, actor), an id write (array, value), an id write into the
# wait-ids source's register at a position of its free list (WAIT_WRITE, position, value) or a buffer pop (deque,).
Effect = tuple[Any, ...]
WAIT_WRITE = "wait-ids"


@dataclass
class Schedule:
    """The effects of one captured call, in act order, and how it moves the act counters."""

    key: tuple[str, ...]
    before: Any  # the protocol state it starts from (an interned fingerprint) ...
    after: Any  # ... and the one it ends in
    kernels: list[tuple[Callable[..., None], list[np.ndarray], list[np.ndarray], Actor]]
    effects: list[Effect]
    acts: int
    actor_acts: list[tuple[Actor, int]]  # acts per actor
    regst_offsets: list[tuple[Regst, Actor, int]]  # regst.act_id = producer.act_id + offset after the call
    wait_offsets: list[tuple[int, int]]  # the same for the wait-ids registers, by free-list position

    def __repr__(self) -> str:
        return (f"Schedule({' + '.join(self.key)}: {self.acts} acts, {len(self.kernels)} kernels, "
                f"{len(self.effects) - len(self.kernels)} main-job effects)")


class Recorder:
    """Collects the effects of the acts of one call while the protocol runs it."""

    def __init__(self, wait_free: list[Regst]) -> None:
        self.effects: list[Effect] = []
        self.wait_position = {id(regst): k for k, regst in enumerate(wait_free)}  # the source's free list

    def id_write(self, actor: Actor, regst: Regst, value: int) -> None:
        if isinstance(actor, WaitAndSendIdsActor):
            self.effects.append((WAIT_WRITE, self.wait_position[id(regst)], value))
        else:
            self.effects.append((regst.first, value))

    def kernel(self, actor: Actor) -> Callable[[list[np.ndarray], list[np.ndarray]], None]:
        kernel, effects = actor.kernel, self.effects

        def recording(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            effects.append((kernel, list(ins), list(outs), actor))
            kernel(ins, outs)

        return recording


def fingerprint(rt: Runtime) -> Any:
    """Everything that decides which acts the scheduler performs next, and on which registers."""
    actors = []
    for actor in rt.actors.values():
        extra: tuple[Any, ...] = ()
        writable = tuple(tuple(r.index for r in q) for q in actor.writable_list)
        if isinstance(actor, WaitAndSendIdsActor):
            extra = (tuple(actor.pending),)
            writable = tuple(len(q) for q in actor.writable_list)  # a rotation: replayed by position
        elif isinstance(actor, ReentrantLockActor):
            extra = (tuple(actor.queue), frozenset(actor.held))
        actors.append((
            actor.actor_id, actor.state, actor.queued, actor.total_reading_cnt, frozenset(actor.eord_received),
            tuple(tuple(r.index for r in q) for q in actor.readable_list), writable, extra,
        ))
    regsts = tuple((rid, tuple(r.reading_cnt for r in regs)) for rid, regs in rt.regsts.items())
    return tuple(actors), regsts, tuple(a.actor_id for a in rt.ready)


OUTPUT_BUFFERS = frozenset({"ForeignWatch"})  # filled by kernels for the session to empty: not protocol state


def is_idle(rt: Runtime) -> bool:
    """Nothing queued: no ready actor, message, launched job or pending instance (and no subscriber)."""
    if rt.ready or rt.msgs or rt.closed or rt.hooks:
        return False
    return not any(queue for name, queue in rt.buffers.items() if name not in OUTPUT_BUFFERS)


class Replayer:
    """Per runtime: the captured transitions by (launch list, state), and the state the runtime is known to be in."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.states: dict[Any, Any] = {}  # interned fingerprints: a known state is compared by identity
        self.schedules: dict[tuple[tuple[str, ...], int], Schedule] = {}
        self.failed: Counter[tuple[str, ...]] = Counter()
        self.known: tuple[Any, int, int] | None = None  # (fingerprint, seq, launched) of the current state
        self.replays = 0

    def intern(self, state: Any) -> Any:
        return self.states.setdefault(state, state)

    def current_fingerprint(self) -> Any:
        rt, known = self.rt, self.known
        if known is not None and known[1] == rt.seq and known[2] == rt.launched:
            return known[0]
        return None

    def schedule_for(self, key: tuple[str, ...]) -> Schedule | None:
        """The schedule to replay for this launch list now, if any (before launching)."""
        state = self.current_fingerprint()
        if state is None or self.rt.hooks or self.rt.closed:
            return None
        return self.schedules.get((key, id(state)))

    def wants_capture(self, key: tuple[str, ...]) -> bool:
        return (self.failed[key] < CAPTURE_TRIES and len(self.schedules) < MAX_TRANSITIONS
                and is_idle(self.rt))

    # -- capture -----------------------------------------------------------------------------------
    def begin_capture(self) -> tuple[Any, Recorder, dict[Actor, Any], dict[Actor, int], dict[Regst, int]]:
        rt = self.rt
        before = self.current_fingerprint() or self.intern(fingerprint(rt))
        recorder = Recorder(list(rt.wait_actor.writable_list[0]))
        saved = {}
        for actor in rt.actors.values():
            if actor.kernel is not None:
                saved[actor] = actor.kernel
                actor.kernel = recorder.kernel(actor)
        act_ids = {actor: actor.act_id for actor in rt.actors.values()}
        regst_ids = {r: r.act_id for regs in rt.regsts.values() for r in regs}
        rt.recorder = recorder
        return before, recorder, saved, act_ids, regst_ids

    def end_capture(self, key: tuple[str, ...], state: tuple[Any, Recorder, dict[Actor, Any], dict[Actor, int],
                                                               dict[Regst, int]], seq_before: int,
                    completed: bool) -> None:
        rt = self.rt
        before, recorder, saved, act_ids, regst_ids = state
        rt.recorder = None
        for actor, kernel in saved.items():
            actor.kernel = kernel
        if not completed:
            self.known = None
            return
        if not is_idle(rt):
            self.failed[key] += 1
            self.known = None
            return
        after = self.intern(fingerprint(rt))
        self.known = (after, rt.seq, rt.launched)
        kernels = [e for e in recorder.effects if len(e) == 4]
        actor_acts = [(a, a.act_id - n) for a, n in act_ids.items() if a.act_id != n]
        regst_offsets, wait_offsets = [], []
        wait = rt.wait_actor
        for regs in rt.regsts.values():
            for regst in regs:
                if regst.act_id == regst_ids[regst]:
                    continue
                producer = rt.actors[regst.desc.producer_task_id]
                if producer is wait:
                    wait_offsets.append((recorder.wait_position[id(regst)], regst.act_id - wait.act_id))
                else:
                    regst_offsets.append((regst, producer, regst.act_id - producer.act_id))
        if len(wait_offsets) >= len(recorder.wait_position):  # the call wrapped the free list: not by position
            self.failed[key] += 1
            return
        self.schedules[(key, id(before))] = Schedule(key, before, after, kernels, recorder.effects,
                                                     rt.seq - seq_before, actor_acts, regst_offsets, wait_offsets)

    # -- replay ------------------------------------------------------------------------------------
    def replay(self, schedule: Schedule) -> None:
        """Perform the schedule's effects in order (the instances are launched); raise what a kernel raises."""
        rt = self.rt
        wait_free = rt.wait_actor.writable_list[0]
        wait_regsts = list(wait_free)
        for effect in schedule.effects:
            if len(effect) == 4:
                fn, ins, outs, actor = effect
                try:
                    fn(ins, outs)
                except Exception as err:
                    from .runtime import kernel_error

                    self.known = None
                    raise kernel_error(rt.plan, actor, err) from err
            elif len(effect) == 2:
                effect[0][0] = effect[1]
            elif len(effect) == 3:
                wait_regsts[effect[1]].first[0] = effect[2]
            else:
                effect[0].popleft()
        for actor, n in schedule.actor_acts:
            actor.act_id += n
        for regst, producer, offset in schedule.regst_offsets:
            regst.act_id = producer.act_id + offset
        wait_act = rt.wait_actor.act_id
        for position, offset in schedule.wait_offsets:
            wait_regsts[position].act_id = wait_act + offset
        wait_free.rotate(-len(schedule.wait_offsets))  # each used register went back to the end, in order
        rt.seq += schedule.acts
        self.known = (schedule.after, rt.seq, rt.launched)
        self.replays += 1
