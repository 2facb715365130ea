"""The replay layer: a Runtime's calls, replayed from captured schedules when the protocol state allows.

``ReplayLayer(runtime)`` is the replay executor's state (executor.py hands it each call, ``run_call``) and sets
itself as ``runtime.layer``, the hook through which the runtime has it settle before its state is read. A call that
starts at a known protocol state with a schedule captured for its launch list is replayed: its kernels (fused into
generated segments after FUSE_AFTER replays) and section notifies run in order, and the protocol's bookkeeping is
left for ``settle`` (``runtime.deferred`` says it is owed). Any other call is run by the protocol
(``runtime.run_protocol``), and captured when it starts idle. This is CUDA Graphs' capture/replay for the actor
runtime: the protocol decided the schedule once, and every kernel of the push, user and pull jobs still runs on
every call.

A replay is refused (and the protocol runs) whenever anything could make the schedule differ: an act or launch
since the last known state, queued work, or a closed runtime. The wait-ids source's registers
are recorded by position in its free list and the state leaves their rotation out: otherwise a loop mixing calls
with 3 and 4 sections would cycle through 100 states. A subscriber (``runtime.hooks``) changes nothing here: the
events of a replayed call are built from its captured acts once it ran (``emit_events``), only while one listens.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ..call_guard import task_writes
from ..errors import KernelError, kernel_error
from ..kernels.tiered import settled
from ..runtime.events import ActEvent
from .capture import CapturedCall, begin_capture, end_capture, fingerprint, is_idle, restore_kernels
from .fused import FUSE_AFTER, Segment, fuse, fused_call_of, fusion_enabled
from .settle import settle

if TYPE_CHECKING:
    from ..runtime import JobInstance, Runtime

CAPTURE_TRIES = 2  # captures of one launch list that may fail before it is never captured again
MAX_TRANSITIONS = 512  # captured schedules kept per runtime
MAX_PENDING_RUNS = 64  # runs of unsettled replays kept before settling anyway


class ReplayLayer:
    """Per runtime: the captured schedules by (launch list, state), and the state the runtime is known to be in."""

    def __init__(self, rt: Runtime, fuse: bool | None = None, lanes: bool | None = None) -> None:
        """``fuse``: whether to fuse replayed schedules; ``lanes``: whether to replay them as lanes on OS threads;
        as the session's ExecutionPolicy says (None: the flag; lanes when the runtime runs its threads at once)."""
        self.rt = rt
        self.states: dict[Any, Any] = {}  # interned fingerprints: a known state is compared by identity
        self.schedules: dict[tuple[tuple[str, ...], int], CapturedCall] = {}
        self.failed: Counter[tuple[str, ...]] = Counter()
        self.routes: dict[tuple[str, ...], tuple[tuple[Any, ...], ...]] = {}  # the buffers each launch enters
        self.known: tuple[Any, int, int] | None = None  # (fingerprint, settled seq, launched) of the state
        self.pending: list[list[Any]] = []  # unsettled replays: [schedule, times] runs, oldest first
        self.last: CapturedCall | None = None  # the schedule replayed last (the session generates its call: callgen.py)
        self.replays = 0  # calls replayed ...
        self.protocol_calls = 0  # ... and calls the protocol ran
        self.fuse = fusion_enabled() if fuse is None else fuse
        self.lanes = rt.threads is not None if lanes is None else lanes
        self.execution: Any = None  # the session's ExecutionPolicy, where lanes record their measured verdict
        self.compiling: list[CapturedCall] = []  # fused schedules whose guard was taken before their segments compiled
        rt.layer = self

    def observe(self) -> None:
        """The runtime's hook before its protocol state is read: settle the replays so far."""
        settle(self)

    def intern(self, state: Any) -> Any:
        return self.states.setdefault(state, state)

    def current_state(self) -> Any:
        """The protocol state, when nothing has acted or been launched since it was last known (else None)."""
        rt, known = self.rt, self.known
        if known is not None and known[1] == rt._seq and known[2] == rt.launched:
            return known[0]
        return None

    def schedule_for(self, key: tuple[str, ...]) -> CapturedCall | None:
        """The schedule to replay for this launch list now, if any (before launching)."""
        state = self.current_state()
        if state is None or self.rt.closed:
            return None
        return self.schedules.get((key, id(state)))

    def wants_capture(self, key: tuple[str, ...]) -> bool:
        return (self.failed[key] < CAPTURE_TRIES and len(self.schedules) < MAX_TRANSITIONS
                and is_idle(self.rt))

    # -- a call ------------------------------------------------------------------------------------
    def run_call(self, instances: list[JobInstance], key: tuple[str, ...],
                 guard: Callable[[tuple[str, ...] | None], None] | None = None) -> None:
        rt, known = self.rt, self.known
        # schedule_for(key), inlined: this is every replayed call's path
        if known is not None and known[1] == rt._seq and known[2] == rt.launched and not rt.closed:
            schedule = self.schedules.get((key, id(known[0])))
        else:
            schedule = None
        if guard is not None:
            guard(schedule.guarded if schedule is not None else None)  # set once fused (None: every variable)
        if schedule is not None:
            routes = self.routes.get(key)
            if routes is None:
                routes = self.routes[key] = tuple(rt._route(name)[1] for name in key)
            launched = rt.launched
            for instance, queues in zip(instances, routes):  # rt.launch(instance, job_id=False), inlined: the
                instance.seq = launched  # schedule already knows which sections run
                launched += 1
                for queue in queues:
                    queue.append(instance)
            rt.launched = launched
            self.replay(schedule)
            if not instances[-1].finished:  # the schedule's steps include every CallbackNotify
                raise RuntimeError(f"replaying {schedule} did not finish {instances[-1].job_name!r}")
            if rt.sink is not None:  # someone listens: the call's act events, built from its schedule
                self.emit_events(schedule, "lanes" if schedule.lanes is not None else
                                 "fused" if schedule.fused is not None else "replay")
            return
        self.protocol_calls += 1
        if not self.wants_capture(key):
            rt.run_protocol(instances)
            return
        self.capture(instances, key)

    def capture(self, instances: list[JobInstance], key: tuple[str, ...]) -> None:
        """Run the call by the protocol, recording it; keep its schedule when it came back to where it started."""
        rt = self.rt
        if rt.deferred:
            self.observe()
        before = self.current_state() or self.intern(fingerprint(rt))
        capture = begin_capture(rt, before)
        try:
            rt.run_protocol(instances)
        except BaseException:
            self.failed[key] += 1
            self.known = None
            raise
        finally:
            restore_kernels(rt, capture)
        if not is_idle(rt):  # something else was left to do: the call's end is no state to replay from
            self.failed[key] += 1
            self.known = None
            return
        after = self.intern(fingerprint(rt))
        self.known = (after, rt._seq, rt.launched)
        schedule = end_capture(rt, key, capture, after)
        if schedule is None:
            self.failed[key] += 1
        elif (key, id(before)) not in self.schedules:  # else keep the one already replayed, and fused
            if self.lanes:  # the Plan's threads compute at once: replay each on its own OS thread
                from .lanes import build_lanes

                schedule.lanes = build_lanes(rt, schedule)
                schedule.note_lowering()
            self.schedules[(key, id(before))] = schedule

    def replay(self, schedule: CapturedCall) -> None:
        """Run the schedule's kernels and notifies in order (the instances are launched, without their wait-ids
        entries); the protocol's bookkeeping is left for ``settle``. Raises what a kernel raises, as KernelError."""
        rt = self.rt
        try:
            if schedule.lanes is not None:
                schedule.lanes()
            else:
                for step in schedule.fused or schedule.steps:
                    step()
        except BaseException as err:
            self.known = None  # part of the call ran: no known state any more
            if isinstance(err, KernelError) or not isinstance(err, Exception):  # a segment names its op itself
                raise
            actor = schedule.step_actors[schedule.steps.index(step)] if step in schedule.steps else None
            if actor is None:  # a notify, or a segment's own step (its kernels name their op themselves)
                raise
            raise kernel_error(rt.plan, actor, err) from err
        pending = self.pending
        if pending and pending[-1][0] is schedule:
            pending[-1][1] += 1
        else:
            if len(pending) >= MAX_PENDING_RUNS:
                self.observe()
            pending.append([schedule, 1])
        rt.deferred = True
        self.known = (schedule.state, rt._seq, rt.launched)
        self.last = schedule
        self.replays += 1
        schedule.replays += 1
        if (schedule.replays >= FUSE_AFTER and schedule.fused is None and not schedule.fuse_tried and self.fuse
                and all(settled(actor.kernel) for actor in schedule.kernels)):  # tiered kernels: fuse Numba's
            schedule.fuse_tried = True
            if schedule.lanes is not None:
                if schedule.lanes.fuse():
                    schedule.guarded = schedule.lanes.guarded()
                    schedule.note_lowering()
                return
            fused = fuse(rt, schedule)
            if fused is not None:
                schedule.fused = batch_notifies(rt, fused)
                schedule.guarded = guarded_variables(rt, schedule)
                schedule.note_lowering()
                if not compiled(schedule):
                    self.compiling.append(schedule)
        elif self.compiling:
            self.compiled_guards()

    def emit_events(self, schedule: CapturedCall, executor: str) -> None:
        """Hand the runtime's sink the act events of the call ``schedule`` just replayed: the protocol's acts of
        that call (captured: ``act_log``), with the sequence numbers and act ids they have now (settled first),
        naming ``executor``. Only when someone listens (``runtime.sink``): an unobserved replay builds nothing."""
        rt = self.rt
        self.observe()  # the counters the events carry
        sink, tier_of = rt.sink, rt.tier_of
        if sink is None:
            return
        free = list(rt.wait_actor.writable_list[0])  # the wait-ids registers as the call found them: the
        used = len(schedule.delta.wait_writes)  # call rotated its free list by the ones it used
        start = free[len(free) - used:] + free[:len(free) - used]

        def index(moved: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
            return tuple((rid, start[~i].index if i < 0 else i) for rid, i in moved)  # (capture.end_capture)

        seq = rt._seq - len(schedule.act_log)
        for i, (actor, read, written, later) in enumerate(schedule.act_log):
            task = actor.task
            sink.replayed(ActEvent(seq + i, actor.actor_id, actor.name, task.task_type, task.job_id,
                                   actor.act_id - later, index(read), index(written), tier_of(actor), executor))

    def compiled_guards(self) -> None:
        """The guard of each fused schedule whose segments have compiled since it was fused, again: act by act, a
        segment could fail at each act taking an external (a pull after the updates); compiled, only before its
        first act. (callgen.py asks too, before it reads a schedule's guard.)"""
        done = [schedule for schedule in self.compiling if compiled(schedule)]
        for schedule in done:
            self.compiling.remove(schedule)
            schedule.guarded = guarded_variables(self.rt, schedule)

    def __repr__(self) -> str:
        return (f"<ReplayLayer: {len(self.schedules)} schedules, {self.replays} calls replayed, "
                f"{self.protocol_calls} run by the protocol>")


def compiled(schedule: CapturedCall) -> bool:
    """Whether every segment of a fused schedule is past its compile (done, or failed: act by act for good)."""
    return all(step.fn is not None or step.error is not None for step in schedule.fused or ()
               if isinstance(step, Segment))


def guarded_variables(rt: Runtime, schedule: CapturedCall) -> tuple[str, ...]:
    """The variables a failing replay of ``schedule.fused`` could leave half-written: those written at or before
    its last act that can fail. A failure stops the call where it happens, so a variable written only after
    that act is never touched by a failing call, and needs no copy before it (call_guard.CallGuard).

    What can fail: an act not fused (a Python kernel may raise anything), a fused call that is ``checked``
    (index checks: labels, gathers), and a segment's start (it fetches the pushed arrays and allocates the pulled
    ones), or, while it compiles, each of its acts taking an external (``Segment.raises_at``: act by act, the
    kernel fetches or allocates there; ``ReplayLayer.compiled_guards`` narrows the guard once compiled). What
    cannot: an unchecked fused call (Numba arithmetic on the fixed shapes it was compiled for, with NumPy's error
    model: x / 0 is inf, not an exception), a section notify and a segment's hand-offs (the runtime's
    own bookkeeping). A Ctrl-C cannot land in between: the session defers it, or copies everything.
    """
    writes = task_writes(rt.plan)
    acts: list[tuple[bool, tuple[str, ...]]] = []  # (can fail, variables written), in the order they run
    for step in schedule.fused or ():
        if isinstance(step, Segment):
            acts.append((bool(step.external_acts), ()))  # its start fetches or allocates them (a long run's later
            # pieces, combine.split_run, take none); act by act while it compiles, a pull allocates at its own act
            raises_at = step.raises_at
            for k, (kernel, actor) in enumerate(zip(step.steps, step.actors)):
                call = fused_call_of(actor, kernel)
                acts.append((call is None or call.checked or k in raises_at, writes.get(actor.task.task_id, ())))
            continue
        step_actor = schedule.actor_of(step)
        if step_actor is not None:  # a lone Numba call (``direct``) cannot fail: unchecked, no external
            acts.append((id(step) not in schedule.direct, writes.get(step_actor.task.task_id, ())))
    last = max((i for i, (fails, _) in enumerate(acts) if fails), default=-1)
    return tuple(sorted({name for _, written in acts[: last + 1] for name in written}))


class Notifies:
    """Consecutive section notifies of a fused schedule as one step: each finishes the oldest instance launched
    of its section's job, as ``Runtime.notify_section_done`` does, with the buffers looked up once."""

    __slots__ = ("queues", "sections")

    def __init__(self, rt: Runtime, sections: list[int]) -> None:
        self.sections = tuple(sections)
        self.queues = tuple(rt.notifier(section) for section in sections)

    def __call__(self) -> None:
        for queue in self.queues:
            queue.popleft().finished = True  # JobInstance.finish(), inlined

    def __repr__(self) -> str:
        return f"Notifies(sections {list(self.sections)})"


def batch_notifies(rt: Runtime, steps: list[Callable[[], None]]) -> list[Callable[[], None]]:
    """``steps`` with each run of consecutive section notifies (``partial(rt.notify_section_done, id)``, as
    capture.py records them) made one ``Notifies`` step."""
    out: list[Callable[[], None]] = []
    run: list[int] = []
    for step in [*steps, None]:
        if isinstance(step, partial) and step.func == rt.notify_section_done:
            run.append(step.args[0])
            continue
        if run:
            out.append(Notifies(rt, run))
            run = []
        if step is not None:
            out.append(step)
    return out
