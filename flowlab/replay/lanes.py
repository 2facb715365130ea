"""Per-thread replay: a captured schedule of a multi-device Plan run as one lane per compute thread, at once.

The replay layer (layer.py) runs a captured schedule's steps in capture order on the caller's thread. On a Plan
whose threads compute at once (several CPU devices: runtime/threads.py) that order takes the parallelism away;
the protocol's own threaded mode keeps it but pays its per-act Python (ready queues, register hand-offs) under
the GIL for every act. ``Lanes`` keeps both: the steps are split by the Plan thread of their actor (one lane per
compute thread; the steps of system threads, the foreign I/O and the section notifies go to the caller's lane,
a boxing act to the lane that reads its output: lane_order.to_reader_lanes),
each lane runs its steps in capture order on its own OS thread, and a step waits on another lane only where the
two touch the same memory: one writes bytes the other reads or writes (a boxing step reading the other device's
gradient, a memory block reused). Those waits are the only hand-offs, a released ``threading.Lock`` each.

Why the results are the capture's bit for bit: every pair of steps that touch overlapping bytes (at least one
writing them) runs in capture order, on one lane by its order or across lanes by a wait, and a kernel is a
function of the bytes it is handed (runtime/threads.py relies on the same). Which inputs a kernel writes: its
outputs, and for an op with no outputs or a system op every input (OneFlow's *_update ops and assign mutate
theirs), but for a boxing kernel only its output (so both devices' boxing of one gradient runs at once). Steps
that touch the runtime itself (foreign I/O, watches, notifies: ``RUNTIME_KERNELS``) also conflict with each other
through one shared pseudo-range, so they keep their order. Waits always point to earlier steps of the capture
order, so lanes cannot wait on each other in a cycle.
tests/replay/test_lanes_replay.py proves lanes bit-identical to the protocol on 2 and 3 devices.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from time import perf_counter, thread_time
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.array_utils import byte_bounds

from ..call_guard import task_writes
from ..errors import KernelError, kernel_error
from ..runtime.threads import RUNTIME_KERNELS, compute_threads
from .lane_order import conflict_preds, schedule_order, successors_of, to_reader_lanes, without_piece

if TYPE_CHECKING:
    from ..runtime.actor import Actor
    from ..runtime.runtime import Runtime
    from .capture import CapturedCall as Schedule

_RUNTIME_RANGE = (-2, -1)  # the pseudo byte range every step touching the runtime's own state writes


def step_ranges(step: Callable[[], None], actor: Actor | None) -> list[tuple[int, int, bool]]:
    """The byte ranges a step touches, (low, high, writes). A notify touches only the runtime."""
    if actor is None:
        return [(*_RUNTIME_RANGE, True)]
    from ..ops.registry import get_op_def

    op = actor.task.exec_sequence[0]
    ins, outs = step.args  # type: ignore[attr-defined]  # partial(kernel, ins, outs), as capture.Recorder made it
    # a boxing kernel (runtime/boxing_kernels.py) writes only its output: the two devices' adds of a reduce-scatter,
    # or copies of an all-gather, read the same gradient or piece at once
    op_def = get_op_def(op.op_type)
    writes_inputs = not actor.task.is_boxing and (not op.output_lbns or op_def.system)
    written_in = [writes_inputs] * len(ins)
    if writes_inputs and op_def.mutable_inputs is not None:
        # an update writes its model and state, and only reads the learning rate every update of the device
        # reads: taken as written, every update conflicted with every other (quadratic in the variables)
        written_in = [arg in op_def.mutable_inputs for arg, lbns in op.inputs.items() for _ in lbns]
    ranges = [(*_RUNTIME_RANGE, True)] if op.op_type in RUNTIME_KERNELS else []
    for arrays, writes in ((ins, written_in), (outs, [True] * len(outs))):
        for a, written in zip(arrays, writes):
            if not isinstance(a, np.ndarray):
                ranges.append((*_RUNTIME_RANGE, True))  # not memory we can see: order it with the runtime's
                continue
            if a.nbytes:
                low, high = byte_bounds(a)
                ranges.append((low, high, written))
    if actor.task.is_boxing and actor.task.produced_regst_desc["out"].piece_inplace_consumed_regst_desc_id >= 0:
        ranges = without_piece(ranges, ins)
    return ranges


Entry = tuple[Callable[[], None], tuple[Any, ...], Any, int]  # (function, waits, signal, capture index): see Lane


def raises(fn: Callable[[], None], steps: list[tuple[Callable[[], None], Actor | None, int]]) -> list[int]:
    """The capture indices at which a lane's entry ``fn``, made of ``steps`` ((step, actor, capture index) each),
    can raise, decided from what the entry runs, so that where hand-offs cut a lane never changes the answer:

    - a segment: at its first act when it fetches a pushed array or allocates a pulled one, and at each checked call
      (a label out of range); its unchecked calls cannot (Numba arithmetic on the fixed shapes it was compiled
      for, with NumPy's error model). ``Segment.raises_at``: a lane's runs begin at each act taking an external,
      so it is the same act by act (while it compiles) as compiled;
    - a step run as its Python kernel, lone or with no fused form: at it (a Python kernel may raise anything; a
      push pops the caller's array, a pull copies one out), but for a boxing kernel (slices copied or added between
      registers whose shapes the Plan fixed: nothing it does depends on the data);
    - a lone step run as its Numba call (``fused.direct_call``: unchecked, no external) and a notify: nowhere."""
    from .fused import Segment

    if isinstance(fn, Segment):
        return [steps[k][2] for k in fn.raises_at]
    [(step, actor, index)] = steps
    if fn is not step or actor is None or actor.task.is_boxing:
        return []
    return [index]



class Lane:
    """One lane: its steps in capture order (``steps``: the function, the actor, the locks it waits on first,
    the lock it releases after when a step of another lane waits on it, its capture index), and the program it
    runs (``program``: the steps, or runs of them fused into segments; ``signals`` and ``indices`` per entry).
    ``key``: the Plan thread (machine_id, thrd_id)."""

    __slots__ = ("key", "steps", "program", "signals", "indices")

    def __init__(self, key: tuple[int, int]) -> None:
        self.key = key
        self.steps: list[tuple[Callable[[], None], Actor | None, tuple[threading.Lock, ...], threading.Lock | None,
                               int]] = []
        self.program: list[tuple[Callable[[], None], tuple[threading.Lock, ...], threading.Lock | None]] = []
        self.signals: list[threading.Lock | None] = []
        self.indices: list[int] = []  # each entry's (first) step's index in the capture order

    def build(self, entries: list[Entry]) -> None:
        self.program = [(fn, waits, signal) for fn, waits, signal, _ in entries]
        self.signals = [signal for _, _, signal, _ in entries]
        self.indices = [index for _, _, _, index in entries]

    def __repr__(self) -> str:
        waits = sum(len(w) for _, _, w, _, _ in self.steps)
        segments = len(self.steps) - len(self.program)
        fused = f", fused into {len(self.program)} entries" if segments else ""
        return f"<lane machine {self.key[0]} thread {self.key[1]}: {len(self.steps)} steps{fused}, {waits} waits>"


def build_lanes(rt: Runtime, schedule: Schedule) -> Lanes | None:
    """The schedule as lanes, or None when fewer than two lanes would run kernels (nothing to overlap)."""
    keys = sorted(compute_threads(rt.plan))
    if len(keys) < 2:
        return None
    caller = keys[0]
    lane_of: list[int] = []
    for actor in schedule.step_actors:
        key = (actor.task.machine_id, actor.task.thrd_id) if actor is not None else caller
        if key in keys:
            lane_of.append(keys.index(key))
        elif Lanes.pushes_on_last_lane and actor is not None and actor.task.exec_sequence[0].op_type == "foreign_input":
            lane_of.append(len(keys) - 1)
        else:
            lane_of.append(0)
    if len(set(lane_of)) < 2:
        return None
    policy = getattr(rt.layer, "execution", None)  # the session's ExecutionPolicy (None: a layer made by hand)
    verdict = policy.measured.get("lanes") if policy is not None else None
    if verdict is not None and not verdict.taken:  # the session's lanes lost to one thread: decided once
        return None
    lanes = Lanes(rt, schedule, keys, lane_of)
    if policy is not None and policy.lanes_trial and verdict is None:
        same = [s.lanes.trial for s in getattr(rt.layer, "schedules", {}).values()
                if s.key == schedule.key and s.lanes is not None and s.lanes.trial is not None]
        lanes.trial = same[0] if same else Trial(policy)
    return lanes


class Trial:
    """Lanes against one thread, timed once the lanes are fused and compiled (``ready``), on the replays of one
    launch list (its schedules, one per rotation of the boxing registers, share the trial): the calls alternate
    between the lanes and the same fused programs merged on the caller's thread (``Lanes.run_merged``: the same
    kernels and segments, no hand-off, no second core), wall clock each, ``TRIAL_PAIRS`` of each. The first trial
    to finish decides for the session (``ExecutionPolicy.settle_lanes``, shown by ``print(session.execution)``):
    lanes stay, or every schedule drops them (keeping their programs merged on one thread: ``drop_lanes``) and the
    lane threads end. Both ways run the
    capture's steps with every conflicting pair in capture order, so the results are the same bits."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.serial: list[float] = []
        self.lanes: list[float] = []

    @staticmethod
    def timed(run: Callable[[], None], serial: bool) -> float:
        """Run one call's replay; its wall seconds (``serial``: which way it ran; a test may stand in)."""
        start = perf_counter()
        run()
        return perf_counter() - start

    @staticmethod
    def ready(lanes: Lanes) -> bool:
        """Whether a timing now says what later calls will take: the kernels are settled (tiered start) and the
        lanes fused, their segments compiled (or no fusion is coming: flag fuse=off, nothing to fuse)."""
        from ..kernels.tiered import settled

        layer = lanes.rt.layer
        if getattr(layer, "fuse", False) and not lanes.schedule.fuse_tried:
            return False
        return (all(segment.fn is not None or segment.error is not None for segment in lanes.segment_of.values())
                and all(settled(actor.kernel) for actor in lanes.schedule.kernels))

    def call(self, lanes: Lanes) -> None:
        from ..runtime.policy import TRIAL_PAIRS, lanes_verdict

        verdict = self.policy.measured.get("lanes")
        if verdict is None and not self.ready(lanes):
            lanes.run()
            return
        if verdict is None:
            serial = len(self.serial) <= len(self.lanes)
            seconds = self.timed(lanes.run_merged if serial else lanes.run, serial)
            (self.serial if serial else self.lanes).append(seconds)
            if len(self.lanes) < TRIAL_PAIRS:
                return
            self.policy.settle_lanes(*lanes_verdict(self.serial, self.lanes, bool(lanes.segment_starts)))
            verdict = self.policy.measured["lanes"]
        else:  # another schedule's trial decided
            lanes.run() if verdict.taken else lanes.run_merged()
        lanes.trial = None
        if not verdict.taken:
            drop_lanes(lanes.rt)


# a lost trial's schedule with at least this many kernels keeps the lanes' programs merged on one thread; a smaller
# one fuses again serially, which compiles in seconds and whose bigger segments run faster (the 2-device MLP, 71
# kernels: 6.74 against 7.62 ms CPU a call merged); ResNet-50's 2-device serial segments compiled for over 24 min
# (4.6 min at load 3 since its two rotations' schedules share their segments and views are cheap: fused.py)
KEEP_MERGED_KERNELS = 400


def drop_lanes(rt: Runtime) -> None:
    """One thread runs the runtime's replays from now on: no schedule keeps lanes, no new capture gets any, and
    the lane threads end (a generated call needs a runtime without). A big schedule (``KEEP_MERGED_KERNELS``) whose
    lanes are fused keeps their programs merged on one thread (``merged_program``: the segments the trial compiled
    and timed) as its fused steps, so the next call runs compiled code at once: a serial fusion of a big Plan
    (ResNet-50 on 2 devices) compiles for minutes, and its calls replayed act by act meanwhile. Any other fuses
    serially."""
    from .layer import ReplayLayer, batch_notifies, compiled, guarded_variables

    layer = rt.layer
    if not isinstance(layer, ReplayLayer):
        return
    layer.lanes = False
    for schedule in layer.schedules.values():
        lanes = schedule.lanes
        if lanes is None:
            continue
        schedule.lanes = None
        if lanes.segment_starts and len(schedule.kernels) >= KEEP_MERGED_KERNELS:
            merged = lanes.merged_program()
            schedule.fused = batch_notifies(rt, [fn for fn, _ in merged])
            schedule.direct = {id(fn): index for fn, index in merged
                               if fn is not schedule.steps[index] and index not in lanes.segment_starts}
            schedule.guarded = guarded_variables(rt, schedule)  # the serial order's: narrower than the lanes'
            if not compiled(schedule):
                layer.compiling.append(schedule)
        else:
            schedule.guarded = None  # every variable guarded until the serial fusion works its guard out
            schedule.fuse_tried = False
        schedule.note_lowering()
    if rt.threads is not None:
        rt.stop_threads()
        rt.threads = None


class Lanes:
    """A schedule's steps as lanes; calling it runs one replay (lane 0 on the caller's thread) and raises the
    failure earliest in capture order, as a KernelError naming its op."""

    reorder = True  # order each lane's steps by a simulated run (lane_order.py); False: capture order

    reordered = staticmethod(schedule_order)
    boxing_with_reader = True  # run a boxing act on the lane reading its output (lane_order.to_reader_lanes)
    # the pushes' copies of the caller's arrays on the last lane, not the caller's: that one already runs the pull, the
    # notifies and the other system steps, and was the busier by about the batch's copy (0.6 MB on 2 devices)
    pushes_on_last_lane = True

    def __init__(self, rt: Runtime, schedule: Schedule, keys: list[tuple[int, int]], lane_of: list[int]) -> None:
        self.rt, self.schedule = rt, schedule
        self.lanes = [Lane(key) for key in keys]
        self.actors = schedule.step_actors
        n = len(keys)
        ranges_of = [step_ranges(step, actor) for step, actor in zip(schedule.steps, self.actors)]
        preds = conflict_preds(ranges_of)  # once, for the three uses below (each once scanned every range so far)
        succs = successors_of(preds)
        follow: dict[int, int] = {}
        if self.boxing_with_reader:
            lane_of, follow = to_reader_lanes(ranges_of, lane_of, [a is not None and a.task.is_boxing
                                                                     for a in self.actors], succs)
        if not self.reorder:
            order = list(range(len(lane_of)))
        elif self.reordered is schedule_order:
            order = schedule_order(ranges_of, lane_of, follow, preds)
        else:  # a replaced order function (a test's) takes the three arguments it always took
            order = self.reordered(ranges_of, lane_of, follow)
        self.order = order
        clocks: list[list[list[int]]] = [[] for _ in keys]  # per lane, per step: how far each lane is known done
        signals: dict[tuple[int, int], threading.Lock] = {}
        waits_of: dict[int, list[tuple[int, int]]] = {}
        counts = [0] * n
        self.positions = [0] * len(lane_of)  # each step's position in its lane
        placed = [False] * len(lane_of)
        for index in order:
            lane = lane_of[index]
            position = counts[lane]
            counts[lane] += 1
            clock = list(clocks[lane][-1]) if clocks[lane] else [-1] * n
            needed: list[tuple[int, int]] = []
            # the steps it conflicts with that run before it (every conflicting earlier one, when ``order`` keeps
            # each conflicting pair's capture order, as it does): on each other lane, wait for the last of them
            last_on: dict[int, int] = {}
            for other_step in (*preds[index], *succs[index]):
                other = lane_of[other_step]
                if placed[other_step] and other != lane:
                    last_on[other] = max(last_on.get(other, -1), self.positions[other_step])
            for other in sorted(last_on):
                last = last_on[other]
                if clock[other] < last:  # not already known done through an earlier wait
                    needed.append((other, last))
                    for k, done in enumerate(clocks[other][last]):
                        clock[k] = max(clock[k], done)
            clock[lane] = position
            clocks[lane].append(clock)
            waits_of[index] = needed
            for wait in needed:
                signals.setdefault(wait, threading.Lock())
            self.positions[index] = position
            placed[index] = True
        self.lane_of = lane_of
        self.clocks = [clocks[lane][position] for lane, position in zip(lane_of, self.positions)]
        for index in order:
            own = self.lanes[lane_of[index]]
            signal = signals.get((lane_of[index], len(own.steps)))
            step = schedule.steps[index]
            own.steps.append((step, self.actors[index], tuple(signals[w] for w in waits_of[index]), signal, index))
        for own in self.lanes:
            own.build([(fn, waits, signal, index) for fn, _, waits, signal, index in own.steps])
        self.signals = list(signals.values())
        for lock in self.signals:
            lock.acquire()  # held: not done yet
        self.failures: list[tuple[int, BaseException]] = []
        self.failed = False
        self.trace: list[tuple[int, int, float, float, float, float]] | None = None  # see ``traced``
        self.segment_of: dict[int, Any] = {}  # capture index -> the fused segment that runs it (``fuse``)
        self.segment_starts: set[int] = set()  # the capture index of each segment's first step
        self.raising: set[int] = set()  # the capture indices at which the fused programs can raise (``raises``)
        self.trial: Trial | None = None  # timing lanes against one thread on the first replays (``build_lanes``)
        self.merged: list[tuple[Callable[[], None], int]] | None = None  # ``merged_program``, once fused

    # -- fusing ------------------------------------------------------------------------------------------
    def fuse(self) -> bool:
        """Fuse each lane's runs of fusable steps into segments (fused.py), a run ending where another lane
        waits on it and beginning where it waits on another: a lane's hand-offs stay between its segments.
        Returns whether anything fused; any failure leaves the lanes act by act (with a warning)."""
        from .fused import _arena_table

        table = _arena_table(self.rt)
        self.raising.clear()
        try:
            programs = [self._fuse_lane(lane, table) for lane in self.lanes]
        except Exception as err:  # fusion is an optimization: never fail the call because of it
            warnings.warn(f"flowlab could not fuse the lanes of {self.schedule!r}; they keep replaying act by act "
                          f"({type(err).__name__}: {err})", RuntimeWarning, stacklevel=2)
            self.segment_of.clear()
            self.segment_starts.clear()
            self.raising.clear()
            return False
        for lane, entries in zip(self.lanes, programs):
            lane.build(entries)
        self.merged = None
        return bool(self.segment_starts)

    def _fuse_lane(self, lane: Lane, table: Any) -> list[Entry]:
        from ..kernels.registry import External
        from .fused import _segments, direct_call, segment_call_of

        entries: list[Entry] = []
        run: list[tuple[Callable[[], None], Actor, Any, tuple[threading.Lock, ...], threading.Lock | None, int]] = []
        notifies: list[Entry] = []  # notifies met inside a run, with no hand-off: they follow its segment

        def add(fn: Callable[[], None], waits: tuple[threading.Lock, ...], signal: threading.Lock | None,
                steps: list[tuple[Callable[[], None], Actor | None, int]]) -> None:
            entries.append((fn, waits, signal, steps[0][2]))
            self.raising.update(raises(fn, steps))  # from the entry as built: ``guarded`` reads it

        def flush() -> None:
            if len(run) >= 2:  # a long run is several segments (fused.MAX_SEGMENT_CALLS): waits before the
                start = 0  # first, the signal after the last
                segments = _segments(self.rt, table, [(step, actor, call) for step, actor, call, *_ in run])
                for number, segment in enumerate(segments):
                    piece = run[start:start + len(segment.actors)]
                    start += len(piece)
                    add(segment, run[0][3] if number == 0 else (), run[-1][4] if number == len(segments) - 1 else None,
                        [(step, actor, index) for step, actor, _, _, _, index in piece])
                    self.segment_of.update({index: segment for *_, index in piece})
                    self.segment_starts.add(piece[0][5])
            else:
                for step, actor, call, waits, signal, index in run:
                    add(direct_call(step, call), waits, signal, [(step, actor, index)])
            entries.extend(notifies)  # a notify touches no register: nothing observes it a little later
            run.clear()
            notifies.clear()

        for step, actor, waits, signal, index in lane.steps:
            if actor is None and run and not waits and signal is None:
                notifies.append((step, waits, signal, index))
                continue
            call = segment_call_of(actor, step, table)
            if call is None or actor is None:  # a notify (no actor) has no segment call
                flush()
                add(step, waits, signal, [(step, actor, index)])
                continue
            if waits or any(isinstance(a, External) for a in call.args):
                # a run begins where it waits, and where it fetches or allocates an array (a segment's start can
                # fail there, so it goes no earlier than the step that needs it: ``guarded``)
                flush()
            run.append((step, actor, call, waits, signal, index))
            if signal is not None:
                flush()
        flush()
        return entries

    def guarded(self) -> tuple[str, ...]:
        """The variables a failing replay of the fused lanes could leave half-written (layer.guarded_variables,
        for lanes): those written by a step that does not follow every step that can fail. A failure stops every
        lane at its next step and releases its waiters, which stop too, so a step that follows the failing one
        (later on its lane, or through a chain of waits: the steps' vector clocks) never runs. Which steps can
        fail: ``raises``, asked of each entry as ``fuse`` built it (``self.raising``)."""
        writes = task_writes(self.rt.plan)
        fail = sorted(self.raising)
        names: set[str] = set()
        for index, actor in enumerate(self.actors):
            written = writes.get(actor.task.task_id, ()) if actor is not None else ()
            if written and not all(f != index and self.happens_before(f, index) for f in fail):
                names.update(written)
        return tuple(sorted(names))

    def happens_before(self, first: int, then: int) -> bool:
        """Whether step ``first`` is done before step ``then`` begins, in every run of the lanes."""
        lane = self.lane_of[first]
        if lane == self.lane_of[then]:
            return self.positions[first] < self.positions[then]
        return self.clocks[then][lane] >= self.positions[first]

    # -- a replay ----------------------------------------------------------------------------------------
    def __call__(self) -> None:
        if self.trial is not None:
            self.trial.call(self)
        else:
            self.run()

    def run_merged(self) -> None:
        """One replay on the caller's thread: every lane's program merged into one sequence (``merged_program``),
        no locks touched (they stay held, as between calls)."""
        if not self.segment_starts:
            self.run_serial()
            return
        merged = self.merged
        if merged is None:
            merged = self.merged = self.merged_program()
        for fn, index in merged:
            try:
                fn()
            except Exception as err:
                actor = self.actors[index]
                if isinstance(err, KernelError) or actor is None:
                    raise
                raise kernel_error(self.rt.plan, actor, err) from err

    def merged_program(self) -> list[tuple[Callable[[], None], int]]:
        """The lanes' entries as one sequence: each lane's in its own order, the lanes interleaved by the simulated
        order of their steps (``order``). An entry's key is the latest rank (position in ``order``) of a step
        that begins an entry up to it on its lane, which is at most the rank of its own last step; an entry waits
        only on entries whose last step ranks before its first step. So whatever it waits on comes first."""
        rank = {index: k for k, index in enumerate(self.order)}
        keyed: list[tuple[int, int, int, Callable[[], None], int]] = []
        for number, lane in enumerate(self.lanes):
            latest = -1
            for position, ((fn, _, _), index) in enumerate(zip(lane.program, lane.indices)):
                latest = max(latest, rank[index])
                keyed.append((latest, number, position, fn, index))
        keyed.sort(key=lambda entry: entry[:3])
        return [(fn, index) for *_, fn, index in keyed]

    def run_serial(self) -> None:
        """One replay of the schedule's steps in capture order on the caller's thread (the trial's other way)."""
        steps = self.schedule.steps
        for index, step in enumerate(steps):
            try:
                step()
            except Exception as err:
                actor = self.actors[index]
                if isinstance(err, KernelError) or actor is None:
                    raise
                raise kernel_error(self.rt.plan, actor, err) from err

    def run(self) -> None:
        # asked each call: ``stop_threads`` (a closed runtime, a failed protocol call) ends the parked ones
        workers = self.rt.threads.lane_workers(len(self.lanes) - 1)  # type: ignore[union-attr]
        self.failures.clear()
        self.failed = False
        run = self.run_lane
        try:
            for worker, lane in zip(workers, self.lanes[1:]):
                worker.start(run, lane)
            run(self.lanes[0])
        finally:
            for worker in workers:
                worker.wait()
            for lock in self.signals:  # every lane released all it signals: hold them again for the next call
                lock.acquire()
        self.trace = None
        if self.failures:
            index, err = min(self.failures, key=lambda f: f[0])
            actor = self.actors[index]
            if isinstance(err, KernelError) or actor is None or not isinstance(err, Exception):
                raise err
            raise kernel_error(self.rt.plan, actor, err) from err

    def record_next(self) -> list[tuple[int, int, float, float, float, float]]:
        """Record the next replay's timeline into the list returned: per step (lane, capture index, wall time it
        began waiting, wall time its kernel began, wall time it ended, its kernel's thread CPU seconds), what
        benchmarks/parallel_runtime.py prints (where each lane computes, where it waits)."""
        self.trace = []
        return self.trace

    def run_lane(self, lane: Lane) -> None:
        """One lane's steps in order; after a failure (here or in another lane) it stops at its next step, and
        releases what it has not signalled yet, so no other lane waits for it forever. While a trace is asked for
        (``record_next``) it also notes each step's times, one ``is None`` test per entry otherwise."""
        trace = self.trace
        number = self.lanes.index(lane) if trace is not None else 0
        indices = lane.indices
        done = 0
        try:
            for fn, waits, signal in lane.program:
                if trace is not None:
                    t0 = perf_counter()
                for lock in waits:
                    lock.acquire()
                    lock.release()
                if self.failed:
                    break
                if trace is None:
                    fn()
                else:
                    t1, c1 = perf_counter(), thread_time()
                    fn()
                    trace.append((number, indices[done], t0, t1, perf_counter(), thread_time() - c1))
                done += 1
                if signal is not None:
                    signal.release()
        except BaseException as err:
            self.failures.append((indices[done], err))
            self.failed = True
        finally:
            for signal in lane.signals[done:]:  # not released yet, so no waiter holds one now
                if signal is not None:
                    signal.release()

    def __repr__(self) -> str:
        return f"<Lanes of {self.schedule!r}: {', '.join(map(repr, self.lanes))}>"
