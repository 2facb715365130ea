"""Steady-state replay: a job call's acts, captured once through the actor protocol, then replayed.

The scheduler is deterministic: from the same protocol state and the same launches it performs the same acts in
the same order, on the same registers. So a call of a job function (push jobs, the user job, pull jobs and the
main job's critical sections) from an idle runtime to an idle runtime is a fixed transition: from protocol state
S, with these launches, the runtime runs these kernels on these register arrays, notifies these sections, and
ends in state S'. ``capture`` records the transition while the protocol runs the call; ``replay`` performs it
when the runtime is known to be in S again. This is CUDA Graphs' capture/replay for the actor runtime: the
protocol decided the schedule once, and every kernel of the push, user and pull jobs still runs on every call.

What only the protocol itself can observe is brought up to date lazily, by ``settle()``: act counters, the
registers' act ids, the section ids the main job's actors wrote into their registers, and the rotation of the
wait-ids source's 100 registers. Consecutive replays of one schedule settle in one pass, so a training loop pays
for the bookkeeping once, not per call; ``Runtime.step()`` and ``Runtime.seq`` settle first, so the debugger and
the protocol always see the state the acts would have left. The wait-ids registers are recorded by position in
the source's free list and the state leaves their rotation out: otherwise a loop mixing calls with 3 and 4
sections would cycle through 100 states.

A replay is refused (and the protocol runs) whenever anything could make the schedule differ: a hook or the
debugger attached, an act or launch since the last known state, queued work, or a closed runtime.
``FLOWLAB_REPLAY=0`` turns it off.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..errors import KernelError
from .fused import FUSE_AFTER, Segment, fuse, fusion_enabled
from .main_actors import ReentrantLockActor, WaitAndSendIdsActor
from .system_kernels import WATCH_BUFFER

if TYPE_CHECKING:
    from .actor import Actor
    from .regst import Regst
    from .runtime import Runtime

CAPTURE_TRIES = 2  # calls of one launch list that may fail to end idle before it is never captured again
MAX_TRANSITIONS = 512  # captured transitions kept per runtime
MAX_PENDING_RUNS = 64  # runs of unsettled replays kept before settling anyway


def replay_enabled() -> bool:
    return os.environ.get("FLOWLAB_REPLAY", "1") not in ("0", "false", "off")


@dataclass
class Schedule:
    """One captured transition: what a call does, in act order, and how it moves the protocol's counters."""

    key: tuple[str, ...]
    before: Any  # the protocol state it starts from (an interned fingerprint) ...
    after: Any  # ... and the one it ends in
    acts: int
    steps: list[Callable[[], None]]  # kernel calls on their register arrays and section notifies, in act order
    step_actors: list[Actor | None]  # the actor whose kernel each step runs (None for a notify)
    id_writes: list[tuple[np.ndarray, int]]  # the last id each main-job register got (other than wait-ids)
    wait_writes: list[tuple[int, int]]  # (free-list position, id) for the wait-ids registers
    actor_acts: list[tuple[Actor, int]]  # acts per actor
    regst_offsets: list[tuple[Regst, Actor, int]]  # regst.act_id = producer.act_id + offset after the call
    wait_offsets: list[tuple[int, int]]  # the same for the wait-ids registers, by free-list position
    replays: int = 0
    fused: list[Callable[[], None]] | None = None  # ``steps`` with runs of kernels fused (fused.py)

    @property
    def kernels(self) -> list[Actor]:
        """The actors whose kernels the steps run, in order."""
        return [actor for actor in self.step_actors if actor is not None]

    def __repr__(self) -> str:
        fused = ""
        if self.fused is not None:
            segments = sum(isinstance(step, Segment) for step in self.fused)
            fused = f", fused into {segments} segment{'s' * (segments != 1)} + {len(self.fused) - segments} steps"
        return (f"Schedule({' + '.join(self.key)}: {self.acts} acts, {len(self.kernels)} kernels, "
                f"{len(self.steps) - len(self.kernels)} notifies{fused})")


class Recorder:
    """Collects what the acts of one call do while the protocol runs it."""

    def __init__(self, wait_free: list[Regst]) -> None:
        self.steps: list[Callable[[], None]] = []
        self.step_actors: list[Actor | None] = []
        self.id_writes: dict[int, tuple[np.ndarray, int]] = {}
        self.wait_writes: list[tuple[int, int]] = []
        self.wait_position = {id(regst): k for k, regst in enumerate(wait_free)}  # the source's free list

    def kernel(self, actor: Actor, notify: Callable[[int], None]) -> Callable[[list[np.ndarray],
                                                                              list[np.ndarray]], None]:
        kernel, steps, step_actors = actor.kernel, self.steps, self.step_actors
        notifies = getattr(kernel, "notifies_section", False)

        def recording(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            if notifies:  # the section id is fixed by the schedule: replay notifies it directly
                steps.append(partial(notify, int(ins[0][0])))
                step_actors.append(None)
            else:
                steps.append(partial(kernel, list(ins), list(outs)))
                step_actors.append(actor)
            kernel(ins, outs)

        return recording

    def id_write(self, actor: Actor, regst: Regst, value: int) -> None:
        if isinstance(actor, WaitAndSendIdsActor):
            self.wait_writes.append((self.wait_position[id(regst)], value))
        else:  # only the last value is left for anyone to see after the call
            self.id_writes[id(regst.first)] = (regst.first, value)


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


OUTPUT_BUFFERS = frozenset({WATCH_BUFFER})  # filled by kernels for the session to empty: not protocol state


class Capture(NamedTuple):
    """What ``begin_capture`` saved for ``end_capture``."""

    before: Any  # the interned state the call starts from
    recorder: Recorder
    kernels: dict[Actor, Any]  # the actors' own kernels, while recording wrappers stand in
    act_ids: dict[Actor, int]
    regst_act_ids: dict[Regst, int]


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
        self.known: tuple[Any, int, int] | None = None  # (fingerprint, settled seq, launched) of the state
        self.pending: list[list[Any]] = []  # unsettled replays: [schedule, times] runs, oldest first
        self.replays = 0
        self.fuse = fusion_enabled()

    def intern(self, state: Any) -> Any:
        return self.states.setdefault(state, state)

    def current_fingerprint(self) -> Any:
        rt, known = self.rt, self.known
        if known is not None and known[1] == rt._seq and known[2] == rt.launched:
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
    def begin_capture(self) -> Capture:
        rt = self.rt
        self.settle()
        before = self.current_fingerprint() or self.intern(fingerprint(rt))
        recorder = Recorder(list(rt.wait_actor.writable_list[0]))
        saved = {}
        for actor in rt.actors.values():
            if actor.kernel is not None:
                saved[actor] = actor.kernel
                actor.kernel = recorder.kernel(actor, rt.notify_section_done)
        act_ids = {actor: actor.act_id for actor in rt.actors.values()}
        regst_ids = {r: r.act_id for regs in rt.regsts.values() for r in regs}
        rt.recorder = recorder
        return Capture(before, recorder, saved, act_ids, regst_ids)

    def end_capture(self, key: tuple[str, ...], state: Capture, seq_before: int, completed: bool) -> None:
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
        self.known = (after, rt._seq, rt.launched)
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
        known = self.schedules.get((key, id(before)))
        if known is not None and known.after is after:  # captured before (the protocol ran it again): keep
            return                                          # the one already replayed, and fused
        self.schedules[(key, id(before))] = Schedule(
            key, before, after, rt._seq - seq_before, recorder.steps, recorder.step_actors,
            list(recorder.id_writes.values()), recorder.wait_writes, actor_acts, regst_offsets, wait_offsets)

    # -- replay ------------------------------------------------------------------------------------
    def replay(self, schedule: Schedule) -> None:
        """Run the schedule's kernels and notifies in order (the instances are launched, without their wait-ids
        entries); the protocol's bookkeeping is left for ``settle``. Raises what a kernel raises, as KernelError."""
        rt = self.rt
        try:
            for step in schedule.fused or schedule.steps:
                step()
        except Exception as err:
            self.known = None
            if isinstance(err, KernelError):  # a fused segment names the failing op itself
                raise
            actor = schedule.step_actors[schedule.steps.index(step)]
            if actor is None:
                raise
            from .runtime import kernel_error

            raise kernel_error(rt.plan, actor, err) from err
        pending = self.pending
        if pending and pending[-1][0] is schedule:
            pending[-1][1] += 1
        else:
            if len(pending) >= MAX_PENDING_RUNS:
                self.settle()
            pending.append([schedule, 1])
        self.known = (schedule.after, rt._seq, rt.launched)
        self.replays += 1
        schedule.replays += 1
        if schedule.replays == FUSE_AFTER and self.fuse:
            schedule.fused = fuse(rt, schedule)

    def settle(self) -> None:
        """Bring the protocol's own bookkeeping up to date with the replays so far."""
        if not self.pending:
            return
        rt = self.rt
        wait_free = rt.wait_actor.writable_list[0]
        known_now = self.current_fingerprint()
        wait = rt.wait_actor
        for schedule, times in self.pending:
            wait_base = wait.act_id
            for actor, n in schedule.actor_acts:
                actor.act_id += n * times
            for regst, producer, offset in schedule.regst_offsets:
                regst.act_id = producer.act_id + offset
            for array, value in schedule.id_writes:
                array[0] = value
            used = len(schedule.wait_offsets)
            if used:  # replay k used the free list's registers k*used + position, then sent them to the end
                wait_regsts = list(wait_free)
                count = len(wait_regsts)
                wait_acts = (wait.act_id - wait_base) // times
                for k in range(max(0, times - count // used - 1), times):
                    for position, value in schedule.wait_writes:
                        wait_regsts[(k * used + position) % count].first[0] = value
                    for position, offset in schedule.wait_offsets:
                        wait_regsts[(k * used + position) % count].act_id = wait_base + (k + 1) * wait_acts + offset
                wait_free.rotate(-used * times)
            rt._seq += schedule.acts * times
        self.pending.clear()
        if known_now is not None:
            self.known = (known_now, rt._seq, rt.launched)
