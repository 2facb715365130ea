"""The step debugger as a Python API: every widget action is one of these calls.

``dbg = flow.debug(job_fn, *args)`` prepares one call of a job on its own Runtime over the session's Plan (with
the session's variable values copied in), so stepping, injecting and restarting never disturb the session.
Stepping, breakpoints and recordings are here; looking at and injecting into the live run is live_state.py.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FlowlabError
from ..frontend.signature import check_inputs, unflatten
from ..job_call import call_instances
from ..runtime import ActEvent, Actor
from ..runtime.hang import WaitGraph
from ..runtime.variables import variable_pieces
from .breakpoints import Breakpoint, BreakpointList
from .history import DEFAULT_HISTORY, TimeTravel
from .inspect import blob_stats
from .live_state import ActorRow, LiveState
from .recording import Memory, Recorder, Recording
from .stop import RunFinished, Stop

__all__ = ["ActorRow", "Debugger", "RunFinished", "Stop", "TimelineEntry"]  # ActorRow: from live_state.py


@dataclass(frozen=True)
class TimelineEntry:
    event: ActEvent
    start_s: float
    duration_s: float


class Debugger(TimeTravel, LiveState):
    def __init__(self, session: Any, desc: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                 history: int = DEFAULT_HISTORY) -> None:
        """``history``: how many acts ``back``/``rewind`` can undo (history.py; ``dbg.history_limit`` later)."""
        self.session, self.desc = session, desc
        self.arrays = check_inputs(desc.signature, args, kwargs, desc.device_count)
        session.try_init()
        self.plan = session.plan
        self._breakpoints: list[Breakpoint] = []
        self._next_id = 1
        self.record_stats = True  # the recording keeps statistics of every blob each act writes
        self.history_limit = history
        self.restart()

    # -- life cycle --------------------------------------------------------------------------------
    def restart(self) -> None:
        """Start the call again from its first act, with the session's current variable values."""
        old = getattr(self, "runtime", None)
        if old is not None:
            old.shutdown()  # machines in other processes (flowlab.distributed); nothing for an in-process runtime
        self.runtime = self.session.debug_runtime()
        self.stepper = self.runtime.stepper()  # what steps it: the protocol here, every machine's acts on Ray
        with self.session.lock:  # the values between two calls, even while other threads call jobs
            live = self.session.variables()
            for name, pieces in variable_pieces(self.runtime).items():  # every device's piece, not only the first
                if name in live:
                    pieces.write(live[name].logical())
            if self.runtime.remote:  # the pieces on the other machines' processes
                self.runtime.load_variables(self.session.variables())
        self.timeline_entries: list[TimelineEntry] = []
        self.recorder = Recorder(self.plan, self.runtime, self.qualified)
        self.injections: list[tuple[int, str]] = []  # (seq before which, lbn)
        self._t0 = time.perf_counter()
        self._pulled: list[np.ndarray] = [None] * len(self.desc.return_op_names)  # type: ignore[list-item]
        self.instances = call_instances(self.desc, self.arrays, self._pulled)
        for instance in self.instances:
            self.runtime.launch(instance)
        self._resume_past: Actor | None = None  # the actor we stopped before: let it act when resumed
        self._reset_history()

    @property
    def finished(self) -> bool:
        return all(i.finished for i in self.instances)

    @property
    def result(self) -> Any:
        """The job's return value, once the pull jobs ran."""
        if not self.finished:
            raise FlowlabError("the run has not finished yet; continue_() runs it to the end")
        return unflatten(self.desc.signature.returns, self.desc.return_structure, self._pulled)

    @property
    def acts(self) -> int:
        return len(self.timeline_entries)

    # -- stepping ----------------------------------------------------------------------------------
    def next_actor(self, thread: int | tuple[int, int] | None = None) -> str | None:
        """The actor the next ``step(thread)`` acts (``thread``: a Plan ``thrd_id`` or ``(machine_id, thrd_id)``)."""
        actor = None if self.finished else self.stepper.peek(thread)
        return self.qualified(actor) if actor else None

    def step(self, thread: int | tuple[int, int] | None = None) -> ActEvent:
        """Perform exactly one act (ignoring breakpoints) and return its event; with ``thread``, the next act of that
        Plan thread (a ``thrd_id`` or ``(machine_id, thrd_id)``) while the other threads wait."""
        if self.finished:
            raise RunFinished(f"the run is finished ({self.acts} acts); restart() runs it again")
        before = self._before_step(thread)  # the act's undo record (history.py)
        start = time.perf_counter()
        event = self.stepper.step(thread)
        if event is None and thread is not None:
            raise FlowlabError(f"no actor of thread {thread!r} can act now; next_actor() names the one that can")
        if event is None:
            raise RunFinished(f"no actor can act:\n{self.why_stuck()}")
        self.timeline_entries.append(TimelineEntry(event, start - self._t0, time.perf_counter() - start))
        mark = self.recorder.undo_mark(event) if before is not None else None
        self.recorder.record(event, self.record_stats)
        self._after_step(before, mark)  # type: ignore[arg-type]
        self._resume_past = None
        return event

    def why_stuck(self) -> WaitGraph:
        """Who waits for whom now (runtime/hang.py): blocked actors, what each waits for, the cycle if any."""
        return self.runtime.wait_graph()

    def step_n(self, n: int) -> Stop:
        return self._run(limit=n)

    def continue_(self) -> Stop:
        """Run until a breakpoint, the end of the run, or an interrupt (which stops between two acts)."""
        return self._run()

    def run_to(self, target: str) -> Stop:
        """Run until the actor (``job/op``) or op named ``target`` is about to act."""
        kind = "actor" if "/" in target else "op"
        bp = self._add(kind, self._check_name(kind, target), temporary=True)
        try:
            stop = self._run()
        finally:
            self._breakpoints.remove(bp)
        return replace(stop, reason="reached") if stop.breakpoint is bp else stop

    def run_to_end_of_job(self) -> Stop:
        """Run until the job of the next act has finished its current run (its CallbackNotify acted)."""
        actor = self.stepper.peek()
        if actor is None or self.finished:
            return Stop("finished")
        job_id = actor.task.job_id
        section_done = lambda e: e.task_type == "CallbackNotify" and self._notified_job(e) == job_id
        return self._run(until=section_done)

    def _notified_job(self, event: ActEvent) -> int:
        notify = self.runtime.actors[event.actor_id]
        (regst_id,) = notify.readable
        value = self.runtime.regsts[regst_id][0].blobs
        section = int(next(iter(value.values()))[0])
        return self.plan.critical_sections[section].job_id

    def _run(self, limit: int | None = None, until: Callable[[ActEvent], bool] | None = None) -> Stop:
        event = None
        done = 0
        with _interrupts_between_acts() as interrupted:
            while True:
                if self.finished:
                    return Stop("finished", event, steps=done)
                actor = self.stepper.peek()
                if actor is None:  # no actor can act and the call has not finished: it hangs
                    return Stop("stuck", event, steps=done, stuck=str(self.why_stuck()))
                if actor is not self._resume_past:
                    bp = self._before_act_hit(actor)
                    if bp is not None:
                        self._resume_past = actor
                        return Stop("breakpoint", event, bp, self.qualified(actor), done)
                event = self.step()
                done += 1
                hit = self._after_act_hit(event)
                if hit is not None:
                    bp, regst_id, lbn, array = hit
                    actor_name = self.qualified(self.runtime.actors[event.actor_id])
                    return Stop("breakpoint", event, bp, self.next_actor(), done, actor_name, event.actor_name, lbn,
                                regst_id, blob_stats(lbn, array, regst=regst_id))
                if until is not None and until(event):
                    return Stop("job finished", event, None, self.next_actor(), done)
                if limit is not None and done >= limit:
                    return Stop("steps", event, None, self.next_actor(), done)
                if interrupted():
                    return Stop("interrupted", event, None, self.next_actor(), done)

    # -- breakpoints -------------------------------------------------------------------------------
    def break_on(self, actor: str | None = None, op: str | None = None, job: str | None = None,
                 nan: bool = False, inf: bool = False,
                 predicate: Callable[[np.ndarray], bool] | None = None, blob: str | None = None) -> Breakpoint:
        """One breakpoint: ``actor="job/op"``, ``op=``, ``job=`` (before they act); ``nan=True`` / ``inf=True``
        / ``predicate=fn`` on any produced blob or on ``blob="op/out_0"``, or ``blob=`` alone (after the act that
        wrote it). Listed by ``dbg.breakpoints``, removed by ``dbg.remove_breakpoint(id)``."""
        given = [k for k, v in (("actor", actor), ("op", op), ("job", job), ("nan", nan), ("inf", inf),
                                ("predicate", predicate)) if v]
        if not given and blob:
            given = ["blob"]
        if len(given) != 1:
            raise ValueError("break_on takes exactly one of actor, op, job, nan, inf, predicate (each of the last "
                             f"three optionally with blob=), or blob= alone; got {given or 'none'}")
        kind = given[0]
        if kind in ("actor", "op", "job"):
            if blob is not None:
                raise ValueError(f"blob= goes with nan, inf or predicate, not with {kind}=")
            return self._add(kind, self._check_name(kind, {"actor": actor, "op": op, "job": job}[kind]))
        if blob is not None and blob not in self._all_lbns():
            raise KeyError(f"no blob {blob!r}; blobs are e.g. {', '.join(sorted(self._all_lbns())[:8])}")
        if predicate is not None and not callable(predicate):
            raise TypeError(f"predicate must be callable; got {predicate!r}")
        return self._add(kind, blob, predicate)

    def _add(self, kind: str, target: str | None, predicate: Any = None, temporary: bool = False) -> Breakpoint:
        # run_to's temporary breakpoint is never listed, so it takes id 0 and leaves the user's numbering (#1, #2,
        # ...) to the breakpoints a person sets.
        bp = Breakpoint(0 if temporary else self._next_id, kind, target, predicate, temporary=temporary)
        if not temporary:
            self._next_id += 1
        self._breakpoints.append(bp)
        return bp

    @property
    def breakpoints(self) -> BreakpointList:
        """The breakpoints set (a copy that prints one per line)."""
        return BreakpointList(bp for bp in self._breakpoints if not bp.temporary)

    def remove_breakpoint(self, bp_id: int | Breakpoint) -> Breakpoint:
        """Remove one breakpoint by its id (or the Breakpoint itself); returns it."""
        wanted = bp_id.id if isinstance(bp_id, Breakpoint) else bp_id
        for bp in self._breakpoints:
            if bp.id == wanted and not bp.temporary:
                self._breakpoints.remove(bp)
                return bp
        ids = [bp.id for bp in self.breakpoints]
        raise KeyError(f"no breakpoint {bp_id!r}; the breakpoints are {ids or 'none'}")

    def clear_breakpoints(self) -> None:
        self._breakpoints.clear()

    def _check_name(self, kind: str, name: str | None) -> str:
        known = {"actor": [self.qualified(a) for a in self.runtime.actors.values()],
                 "op": sorted({a.name for a in self.runtime.actors.values()}),
                 "job": list(self.plan.job_names)}[kind]
        if name not in known:
            raise KeyError(f"no {kind} {name!r}; {kind}s are: {', '.join(known[:40])}"
                           + (" ..." if len(known) > 40 else ""))
        return name

    def _before_act_hit(self, actor: Actor) -> Breakpoint | None:
        job = self.plan.job_names[actor.task.job_id]
        for bp in self._breakpoints:
            if not bp.enabled or not bp.before_act:
                continue
            if (bp.kind == "actor" and bp.target == self.qualified(actor)) or \
               (bp.kind == "op" and bp.target == actor.name) or (bp.kind == "job" and bp.target == job):
                bp.hits += 1
                return bp
        return None

    def _after_act_hit(self, event: ActEvent) -> tuple[Breakpoint, int, str, np.ndarray] | None:
        """The first blob breakpoint the act's writes hit, with the register, lbn and array that hit it."""
        blob_bps = [bp for bp in self._breakpoints if bp.enabled and not bp.before_act]
        if not blob_bps:
            return None
        for regst_id, index in event.written:
            for lbn, array in self.runtime.regsts[regst_id][index].blobs.items():
                for bp in blob_bps:
                    if bp.blob_matches(lbn, array):
                        bp.hits += 1
                        return bp, regst_id, lbn, array
        return None

    # -- recordings --------------------------------------------------------------------------------
    def timeline(self) -> list[TimelineEntry]:
        return list(self.timeline_entries)

    def recording(self) -> Recording:
        """The acts so far (what acted, what it read and wrote, statistics of what it wrote) and the memory
        record (register lifetimes over the acts, block occupancy)."""
        return self.recorder.recording(self.desc.job_name)

    def memory(self) -> Memory:
        """The memory record so far: every memory block, every register's lifetimes in acts (live while
        stepping); ``print(dbg.memory())`` is a table."""
        return self.recorder.memory()

    def trace_events(self) -> dict[str, Any]:
        """The recorded acts as Chrome/Perfetto trace JSON (one row per machine:thread)."""
        from .export import trace_events

        return trace_events(self)

    def export_trace(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.trace_events()))
        return path

    def export_html(self, path: str | Path) -> Path:
        """A self-contained, script-free HTML record of the run: the Plan, every act, the user jobs' blobs."""
        from .export import export_html

        return export_html(self, path)

    @property
    def execution(self) -> Any:
        """How this debugger runs the call (runtime/policy.py): protocol stepping, act by act, and why the faster
        executors of ``session.execution`` are declined here."""
        return self.session.debug_execution()

    def __repr__(self) -> str:
        state = "finished" if self.finished else f"next: {self.next_actor()}"
        return f"<Debugger {self.desc.job_name}: {self.acts} acts, {state}>"


@contextlib.contextmanager
def _interrupts_between_acts() -> Iterator[Callable[[], bool]]:
    """Turn Ctrl-C / a kernel interrupt into a flag checked between acts, so no act is cut in half."""
    flag = [False]
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return

    def handler(signum: int, frame: Any) -> None:
        flag[0] = True

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield lambda: flag[0]
    finally:
        signal.signal(signal.SIGINT, previous)
