"""Capturing one call: what its acts do while the protocol runs it, as a replayable ``CapturedCall``.

The scheduler is deterministic: from the same protocol state and the same launches it performs the same acts in
the same order, on the same registers. So a call of a job function (push jobs, the user job, pull jobs and the
main job's critical sections) from an idle runtime back to the same idle state is a fixed transition: these
kernels on these register arrays, these sections notified, these counters moved. ``begin_capture`` wraps every
kernel in a recorder while the protocol runs the call; ``end_capture`` reads, from what the call changed, how
it moves the protocol's counters, and keeps the transition when it can be replayed: as IR (``Schedule``,
ir/schedule.py: steps and the protocol-state delta as plain data) and bound to the runtime (``CapturedCall``:
the recorded kernel calls, the delta on the runtime's objects, the lowerings the layer adds).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..ir.schedule import Schedule, ScheduleDelta, ScheduleStep
from ..runtime.main_actors import CaseActor, EsacActor, ReentrantLockActor, WaitAndSendIdsActor
from ..runtime.system_kernels import WATCH_BUFFER

if TYPE_CHECKING:
    from ..kernels.registry import Kernel
    from ..runtime.actor import Actor
    from ..runtime.regst import Regst
    from ..runtime.runtime import Runtime

ID_ACTORS = (WaitAndSendIdsActor, ReentrantLockActor, CaseActor, EsacActor)  # their registers carry ids, not data
OUTPUT_BUFFERS = frozenset({WATCH_BUFFER})  # filled by kernels for the session to empty: not protocol state


class BoundDelta(NamedTuple):
    """A Schedule's delta (ir/schedule.py, plain data) resolved to this runtime's actors, registers and arrays
    once, at capture: what settle.py applies, with no lookup per replay."""

    actor_acts: list[tuple[Actor, int]]  # acts per actor
    regst_offsets: list[tuple[Regst, Actor, int]]  # regst.act_id = producer.act_id + offset after the call
    id_writes: list[tuple[np.ndarray, int]]  # the id a main-job register (other than wait-ids) holds after it
    wait_writes: list[tuple[int, int, int]]  # wait-ids registers: (free-list position, act id offset, id)
    rotations: list[tuple[Any, tuple[Regst, ...]]]  # free lists' order after the call
    acts: int


def bind_delta(rt: Runtime, delta: ScheduleDelta) -> BoundDelta:
    """``delta`` on ``rt``'s objects (the one place the IR's delta becomes what settle() writes)."""
    actors, regsts = rt.actors, rt.regsts
    return BoundDelta(
        [(actors[task_id], n) for task_id, n in delta.actor_acts],
        [(regsts[rid][index], actors[producer], offset) for rid, index, producer, offset in delta.regst_offsets],
        [(regsts[rid][index].first, value) for rid, index, value in delta.id_writes],
        list(delta.wait_writes),
        [(actors[task_id].writable[rid], tuple(regsts[rid][i] for i in order))
         for task_id, rid, order in delta.rotations],
        delta.acts)


@dataclass
class CapturedCall:
    """One captured fixed point, bound to its runtime: ``ir`` (the frozen Schedule) and what the replay layer
    runs it with (the recorded kernel calls on their register arrays, and their fused and laned lowerings)."""

    ir: Schedule
    state: Any  # the protocol state it ends in (an interned fingerprint): the one it starts from, or that one
    # with registers that rotate (a SliceBoxing ``out`` has two) in another order, so calls alternate schedules
    steps: list[Callable[[], None]]  # kernel calls on their register arrays and section notifies, in act order
    step_actors: list[Actor | None]  # the actor whose kernel each step runs (None for a notify)
    delta: BoundDelta  # ``ir.delta`` on the runtime's objects: what settle.py applies
    # actors whose arrays rotate: the arrays their last act bound (a replay runs the recorded ones, binding none)
    bindings: list[tuple[Actor, list[np.ndarray], list[np.ndarray]]] = dataclasses.field(default_factory=list)
    replays: int = 0
    fused: list[Callable[[], None]] | None = None  # ``steps`` with runs of kernels fused (fused.py)
    guarded: tuple[str, ...] | None = None  # what a failure of a fused replay could leave half-written (None: all)
    fuse_tried: bool = False  # fused once FUSE_AFTER replays are done and every kernel is on its last tier
    lanes: Any = None  # on a Plan whose threads compute at once: the steps as one lane per thread (lanes.py)
    # a lone step's Numba call in ``fused`` (lanes.direct_call, from a lost lanes trial's merged programs): its
    # capture index, by the call's id (it is no step of ``steps``)
    direct: dict[int, int] = dataclasses.field(default_factory=dict)
    positions: dict[int, int] | None = None  # each step's index in ``steps``, by its id (``actor_of``)
    callgen: str | None = None  # callgen.py: "generated", or why no generated call runs it (None: not tried yet)
    # every act of the call in order, (actor, read, written, act ids the actor makes after it in the call): what a
    # replay's act events are built from when someone listens (layer.emit_events)
    act_log: tuple[tuple[Actor, tuple[tuple[int, int], ...], tuple[tuple[int, int], ...], int], ...] = ()

    @property
    def key(self) -> tuple[str, ...]:
        return self.ir.key

    @property
    def acts(self) -> int:
        return self.ir.delta.acts

    @property
    def kernels(self) -> list[Actor]:
        """The actors whose kernels the steps run, in order."""
        return [actor for actor in self.step_actors if actor is not None]

    def actor_of(self, step: Callable[[], None]) -> Actor | None:
        """The actor whose kernel a step of ``steps`` or ``fused`` runs (None: a notify, a segment, a batch)."""
        index = self.direct.get(id(step))
        if index is None:
            if self.positions is None:  # once: scanning ``steps`` per entry took seconds on ResNet-50's 2 devices
                self.positions = {id(s): i for i, s in enumerate(self.steps)}
            index = self.positions.get(id(step))
        return self.step_actors[index] if index is not None else None

    def note_lowering(self) -> None:
        """``ir`` with the lowering as it is now filled in: the steps of each fused segment and of each lane."""
        from .fused import Segment

        index = {id(step): i for i, step in enumerate(self.steps)}
        segments: list[tuple[int, ...]] = []
        lanes: list[tuple[tuple[int, int], tuple[int, ...]]] = []
        if self.lanes is not None:
            for lane in self.lanes.lanes:
                lanes.append((lane.key, tuple(entry[-1] for entry in lane.steps)))
            by_segment: dict[int, list[int]] = {}
            for i, segment in sorted(self.lanes.segment_of.items()):
                by_segment.setdefault(id(segment), []).append(i)
            segments = [tuple(ix) for ix in by_segment.values()]
        for step in self.fused or ():
            if isinstance(step, Segment):
                segments.append(tuple(index[id(s)] for s in step.steps))
        self.ir = self.ir.lowered(tuple(segments), tuple(lanes))

    def __repr__(self) -> str:
        from .fused import Segment

        fused = ""
        if self.fused is not None:
            segments = sum(isinstance(step, Segment) for step in self.fused)
            others = sum(len(getattr(step, "sections", ())) or 1 for step in self.fused  # a batch of notifies
                         if not isinstance(step, Segment))  # counts as its notifies (layer.Notifies)
            fused = f", fused into {segments} segment{'s' * (segments != 1)} + {others} steps"
        return (f"CapturedCall({' + '.join(self.key)}: {self.acts} acts, {len(self.kernels)} kernels, "
                f"{len(self.steps) - len(self.kernels)} notifies{fused})")


class Recorder:
    """Stands in for the actors' kernels while the protocol runs a call: runs each and records the call, and
    which registers the act reads and writes (the fronts of its slots: what ``Actor.act`` then consumes)."""

    def __init__(self) -> None:
        self.steps: list[Callable[[], None]] = []
        self.step_actors: list[Actor | None] = []
        self.ir_steps: list[ScheduleStep] = []

    def kernel(self, actor: Actor, notify: Callable[[int], None]) -> Kernel:
        own = actor.kernel
        assert own is not None
        kernel, steps, step_actors, ir_steps = own.fn, self.steps, self.step_actors, self.ir_steps
        notifies = own.notifies
        task = actor.task
        op_type = task.exec_sequence[0].op_type if task.exec_sequence else ""
        where = (actor.actor_id, actor.name, op_type, task.task_type, task.machine_id, task.thrd_id)

        def recording(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            kernel(ins, outs)  # first: a kernel that raises records nothing
            if notifies:  # the section id is fixed by the schedule: replay notifies it directly
                section = int(ins[0][0])
                steps.append(partial(notify, section))
                step_actors.append(None)
                ir_steps.append(ScheduleStep(*where, section=section))
            else:
                steps.append(partial(kernel, list(ins), list(outs)))
                step_actors.append(actor)
                ir_steps.append(ScheduleStep(*where, tuple((e[0], e[1][0].index) for e in actor.in_edges),
                                             tuple((e[0], e[1][0].index) for e in actor.out_edges)))

        return own.wrap(recording)


def fingerprint(rt: Runtime) -> Any:
    """Everything that decides which acts the scheduler performs next, and on which registers."""
    actors = []
    for actor in rt.actors.values():
        extra: tuple[Any, ...] = ()
        writable: tuple[Any, ...] = tuple(tuple(r.index for r in q) for q in actor.writable_list)
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


def is_idle(rt: Runtime) -> bool:
    """Nothing queued: no ready actor, message, launched job or pending instance."""
    if rt.ready or rt.msgs or rt.closed:
        return False
    return not any(queue for name, queue in rt.buffers.items() if name not in OUTPUT_BUFFERS)


class Capture(NamedTuple):
    """What ``begin_capture`` saved for ``end_capture``."""

    before: Any  # the interned state the call starts from
    seq: int  # the runtime's act count before the call
    recorder: Recorder
    kernels: dict[Actor, Any]  # the actors' own kernels, while recording wrappers stand in
    act_ids: dict[Actor, int]
    regst_act_ids: dict[Regst, int]
    wait_position: dict[int, int]  # id(wait-ids register) -> its position in the source's free list
    log: ActLog  # the runtime's sink while the call runs


class ActLog:
    """The runtime's event sink while a call is captured: notes every act (the actor and the registers it moved)
    and hands it on to the sink attached before, so a subscriber sees the captured call as it happens."""

    __slots__ = ("acts", "inner")

    def __init__(self, inner: Any) -> None:
        self.acts: list[tuple[Actor, list[tuple[int, int]], list[tuple[int, int]]]] = []
        self.inner = inner

    def acted(self, rt: Runtime, actor: Actor, seq: int, moved: Any) -> Any:
        self.acts.append((actor, *moved))
        return self.inner.acted(rt, actor, seq, moved) if self.inner is not None else None

    def replayed(self, event: Any) -> None:
        if self.inner is not None:
            self.inner.replayed(event)


def begin_capture(rt: Runtime, before: Any) -> Capture:
    """Put recorders in place of the kernels and a log in place of the sink, and note the counters the call will
    move."""
    recorder = Recorder()
    saved = {}
    for actor in rt.actors.values():
        if actor.kernel is not None:
            saved[actor] = actor.kernel
            actor.kernel = recorder.kernel(actor, rt.notify_section_done)
    act_ids = {actor: actor.act_id for actor in rt.actors.values()}
    regst_ids = {r: r.act_id for regs in rt.regsts.values() for r in regs}
    wait_position = {id(regst): k for k, regst in enumerate(rt.wait_actor.writable_list[0])}
    log = ActLog(rt.sink)
    rt.sink = log
    return Capture(before, rt._seq, recorder, saved, act_ids, regst_ids, wait_position, log)


def restore_kernels(rt: Runtime, capture: Capture) -> None:
    """The actors' own kernels and the runtime's own sink again (unless a subscriber came or went meanwhile)."""
    for actor, kernel in capture.kernels.items():
        actor.kernel = kernel
    if rt.sink is capture.log:
        rt.sink = capture.log.inner


def end_capture(rt: Runtime, key: tuple[str, ...], capture: Capture, after: Any) -> CapturedCall | None:
    """The call as a CapturedCall (its ``ir`` the Schedule), or None when it cannot be replayed: it did not come
    back to the state it started from (a replay performs the acts' effects on data and counters, not on the
    registers' places), or it used the wait-ids source's registers more than once each (they are replayed by
    position)."""
    rotations = _rotations(rt, capture, after)
    if rotations is None:
        return None
    wait = rt.wait_actor
    actor_acts = [(a, a.act_id - n) for a, n in capture.act_ids.items() if a.act_id != n]
    regst_offsets, id_writes, wait_writes = [], [], []
    for regs in rt.regsts.values():
        for regst in regs:
            if regst.act_id == capture.regst_act_ids[regst]:
                continue  # not written by the call
            rid = regst.desc.regst_desc_id
            producer = rt.actors[regst.desc.producer_task_id]
            if producer is wait:
                position = capture.wait_position.get(id(regst))
                if position is None:  # it was not free when the call began: not a rotation by position
                    return None
                wait_writes.append((position, regst.act_id - wait.act_id, int(regst.first[0])))
                continue
            regst_offsets.append((rid, regst.index, producer.actor_id, regst.act_id - producer.act_id))
            if isinstance(producer, ID_ACTORS):  # the act wrote the id: replay does not run this actor
                id_writes.append((rid, regst.index, int(regst.first[0])))
    if len(wait_writes) >= len(capture.wait_position):  # the call wrapped the free list: not by position
        return None
    wait_writes.sort()
    delta = ScheduleDelta(rt._seq - capture.seq, tuple((a.actor_id, n) for a, n in actor_acts),
                          tuple(regst_offsets), tuple(id_writes), tuple(wait_writes), tuple(rotations))
    if len(capture.log.acts) != delta.acts:  # a subscriber came or went mid-call: the log missed acts
        return None
    # The wait-ids source's registers rotate and are replayed by position (settle.settle_wait_ids): one of them is
    # logged as (register id, ~its position in the free list when the call began)
    wait_rid = next(iter(wait.writable))
    regsts = rt.regsts[wait_rid]

    def by_position(moved: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
        return tuple((rid, ~capture.wait_position[id(regsts[i])] if rid == wait_rid else i) for rid, i in moved)

    later: dict[Actor, int] = {}  # acts of each actor after this one in the call, walking back
    act_log = []
    for actor, read, written in reversed(capture.log.acts):
        act_log.append((actor, by_position(read), by_position(written), later.get(actor, 0)))
        later[actor] = later.get(actor, 0) + 1
    act_log.reverse()
    recorder = capture.recorder
    return CapturedCall(Schedule(key, tuple(recorder.ir_steps), delta), after, recorder.steps,
                        recorder.step_actors, bind_delta(rt, delta),
                        bindings=[(a, list(a.in_arrays), list(a.out_arrays)) for a, _ in actor_acts
                                  if a.io_lbns is not None], act_log=tuple(act_log))


def _rotations(rt: Runtime, capture: Capture, after: Any) -> list[tuple[int, int, tuple[int, ...]]] | None:
    """How the call left the actors' free lists when it came back to its starting state but for their order
    (registers that rotate: the next call starts from the other order, under its own schedule); None when the
    call changed anything else."""
    if after is capture.before:
        return []
    (actors_a, regsts_a, ready_a), (actors_b, regsts_b, ready_b) = capture.before, after
    if regsts_a != regsts_b or ready_a != ready_b or len(actors_a) != len(actors_b):
        return None
    rotations = []
    by_id = {actor.actor_id: actor for actor in rt.actors.values()}
    for a, b in zip(actors_a, actors_b):
        if a == b:
            continue
        actor = by_id[b[0]]
        if (isinstance(actor, WaitAndSendIdsActor) or a[:6] != b[:6] or a[7:] != b[7:]
                or [sorted(q) for q in a[6]] != [sorted(q) for q in b[6]]):
            return None
        rotations += [(actor.actor_id, rid, tuple(r.index for r in q))
                      for (rid, q), before, now in zip(actor.writable.items(), a[6], b[6]) if before != now]
    return rotations
