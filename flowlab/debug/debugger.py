"""The step debugger as a Python API: every widget action is one of these calls.

``dbg = flow.debug(job_fn, *args)`` prepares one call of a job on its own Runtime over the session's Plan (with
the session's variable values copied in), so stepping, injecting and restarting never disturb the session.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FlowlabError
from ..frontend.signature import check_inputs, unflatten
from ..runtime import ActEvent, Actor, Runtime
from ..session import call_instances
from .breakpoints import Breakpoint
from .inspect import BlobStats, blob_stats


class RunFinished(FlowlabError, RuntimeError):
    """The debugged run has finished: nothing is left to step."""


@dataclass(frozen=True)
class Stop:
    """Why continue_/run_to/step_n stopped: 'breakpoint', 'finished', 'interrupted' or 'steps'."""

    reason: str
    event: ActEvent | None = None  # the last act performed
    breakpoint: Breakpoint | None = None
    next_actor: str | None = None

    def __str__(self) -> str:
        text = self.reason if self.breakpoint is None else f"stopped by {self.breakpoint}"
        if self.next_actor:
            text += f"; next: {self.next_actor}"
        return text


@dataclass(frozen=True)
class ActorRow:
    name: str  # "job/op"
    task_type: str
    job: str
    state: str  # ready | blocked | done | ...
    acts: int
    reason: str | None
    occupancy: dict[int, tuple[int, int]]  # produced regst id -> (registers in use, register_num)


@dataclass(frozen=True)
class TimelineEntry:
    event: ActEvent
    start_s: float
    duration_s: float


class Debugger:
    def __init__(self, session: Any, desc: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.session, self.desc = session, desc
        self.arrays = check_inputs(desc.signature, args, kwargs)
        session.try_init()
        self.plan = session.plan
        self.breakpoints: list[Breakpoint] = []
        self._next_id = 1
        self.restart()

    # -- life cycle --------------------------------------------------------------------------------
    def restart(self) -> None:
        """Start the call again from its first act, with the session's current variable values."""
        old = getattr(self, "runtime", None)
        if old is not None and hasattr(old, "shutdown"):  # machines in other processes (flowlab.distributed)
            old.shutdown()
        self.runtime = self.session.debug_runtime()
        with self.session.lock:  # the values between two calls, even while other threads call jobs
            live = self.session.variable_arrays()
            for name, array in _variable_arrays(self.runtime).items():
                if name in live:
                    array[...] = live[name]
            if hasattr(self.runtime, "load_variables"):  # the pieces on the other machines' processes
                self.runtime.load_variables(self.session.variables())
        self.timeline_entries: list[TimelineEntry] = []
        self.injections: list[tuple[int, str]] = []  # (seq before which, lbn)
        self._t0 = time.perf_counter()
        self._pulled: list[np.ndarray] = [None] * len(self.desc.return_op_names)  # type: ignore[list-item]
        self.instances = call_instances(self.desc, self.arrays, self._pulled)
        for instance in self.instances:
            self.runtime.launch(instance)
        self._resume_past: Actor | None = None  # the actor we stopped before: let it act when resumed

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
    def next_actor(self) -> str | None:
        actor = None if self.finished else self.runtime.peek()
        return self.qualified(actor) if actor else None

    def step(self) -> ActEvent:
        """Perform exactly one act (ignoring breakpoints) and return its event."""
        if self.finished:
            raise RunFinished(f"the run is finished ({self.acts} acts); restart() runs it again")
        start = time.perf_counter()
        event = self.runtime.step()
        if event is None:
            raise RunFinished(f"no actor can act: {self.runtime.describe_blocked()}")
        assert isinstance(event, ActEvent)
        self.timeline_entries.append(TimelineEntry(event, start - self._t0, time.perf_counter() - start))
        self._resume_past = None
        return event

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
            return self._run()
        finally:
            self.breakpoints.remove(bp)

    def run_to_end_of_job(self) -> Stop:
        """Run until the job of the next act has finished its current run (its CallbackNotify acted)."""
        actor = self.runtime.peek()
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
                    return Stop("finished", event)
                actor = self.runtime.peek()
                if actor is None:
                    return Stop("finished", event)
                if actor is not self._resume_past:
                    bp = self._before_act_hit(actor)
                    if bp is not None:
                        self._resume_past = actor
                        return Stop("breakpoint", event, bp, self.qualified(actor))
                event = self.step()
                done += 1
                bp = self._after_act_hit(event)
                if bp is not None:
                    return Stop("breakpoint", event, bp, self.next_actor())
                if until is not None and until(event):
                    return Stop("job finished", event, None, self.next_actor())
                if limit is not None and done >= limit:
                    return Stop("steps", event, None, self.next_actor())
                if interrupted():
                    return Stop("interrupted", event, None, self.next_actor())

    # -- breakpoints -------------------------------------------------------------------------------
    def break_on(self, actor: str | None = None, op: str | None = None, job: str | None = None,
                 nan: bool | str = False, inf: bool | str = False,
                 predicate: Callable[[np.ndarray], bool] | None = None, blob: str | None = None) -> Breakpoint:
        """One breakpoint: ``actor="job/op"``, ``op=``, ``job=`` (before they act); ``nan=True`` / ``inf=True``
        / ``predicate=fn`` on any produced blob or on ``blob="op/out_0"`` (after the act that wrote it)."""
        given = [k for k, v in (("actor", actor), ("op", op), ("job", job), ("nan", nan), ("inf", inf),
                                ("predicate", predicate)) if v]
        if len(given) != 1:
            raise ValueError(f"break_on takes exactly one of actor, op, job, nan, inf, predicate; got {given}")
        kind = given[0]
        if kind in ("actor", "op", "job"):
            return self._add(kind, self._check_name(kind, {"actor": actor, "op": op, "job": job}[kind]))
        if blob is not None and blob not in self._all_lbns():
            raise KeyError(f"no blob {blob!r}; blobs are e.g. {sorted(self._all_lbns())[:8]}")
        if predicate is not None and not callable(predicate):
            raise TypeError(f"predicate must be callable; got {predicate!r}")
        return self._add(kind, blob, predicate)

    def _add(self, kind: str, target: str | None, predicate: Any = None, temporary: bool = False) -> Breakpoint:
        bp = Breakpoint(self._next_id, kind, target, predicate, temporary=temporary)
        self._next_id += 1
        self.breakpoints.append(bp)
        return bp

    def clear_breakpoints(self) -> None:
        self.breakpoints.clear()

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
        for bp in self.breakpoints:
            if not bp.enabled or not bp.before_act:
                continue
            if (bp.kind == "actor" and bp.target == self.qualified(actor)) or \
               (bp.kind == "op" and bp.target == actor.name) or (bp.kind == "job" and bp.target == job):
                bp.hits += 1
                return bp
        return None

    def _after_act_hit(self, event: ActEvent) -> Breakpoint | None:
        blob_bps = [bp for bp in self.breakpoints if bp.enabled and not bp.before_act]
        if not blob_bps:
            return None
        for regst_id, index in event.written:
            for lbn, array in self.runtime.regsts[regst_id][index].blobs.items():
                for bp in blob_bps:
                    if bp.blob_matches(lbn, array):
                        bp.hits += 1
                        return bp
        return None

    # -- looking at state --------------------------------------------------------------------------
    def qualified(self, actor: Actor) -> str:
        return f"{self.plan.job_names[actor.task.job_id]}/{actor.name}"

    def actors(self) -> list[ActorRow]:
        rows = []
        nxt = self.runtime.peek()
        for actor in self.runtime.actors.values():
            reason = actor.blocked_reason()
            state = actor.state if actor.state != "normal" else ("ready" if reason is None else "blocked")
            occupancy = {rid: (len(self.runtime.regsts[rid]) - len(q), len(self.runtime.regsts[rid]))
                         for rid, q in actor.writable.items()}
            name = self.qualified(actor) + ("  <- next" if actor is nxt else "")
            rows.append(ActorRow(name, actor.task.task_type, self.plan.job_names[actor.task.job_id], state,
                                 actor.act_id, reason, occupancy))
        return rows

    def _all_lbns(self) -> dict[str, tuple[int, np.ndarray]]:
        out = {}
        for regst_id, regsts in self.runtime.regsts.items():
            for lbn, array in regsts[0].blobs.items():
                out.setdefault(lbn, (regst_id, array))
        return out

    def _array(self, name: str) -> tuple[str, np.ndarray]:
        """A live array by lbn ("op/y_0"), by job-qualified lbn ("job/op/y_0"), or by op name (first output)."""
        lbns = self._all_lbns()
        if name in lbns:
            return name, lbns[name][1]
        for actor in self.runtime.actors.values():
            op = actor.task.exec_sequence[0]
            if name in (actor.name, self.qualified(actor)) and op.output_lbns:
                regst = actor.task.produced_regst_desc["out"].regst_desc_id
                return op.output_lbns[0], self.runtime.regsts[regst][0].blobs[op.output_lbns[0]]
            for lbn in op.output_lbns:
                if name == f"{self.plan.job_names[actor.task.job_id]}/{lbn}":
                    regst = actor.task.produced_regst_desc["out"].regst_desc_id
                    return lbn, self.runtime.regsts[regst][0].blobs[lbn]
        raise KeyError(f"no blob {name!r}; blobs are e.g. {sorted(lbns)[:10]}")

    def blob(self, name: str) -> BlobStats:
        lbn, array = self._array(name)
        return blob_stats(lbn, array)

    def value(self, name: str) -> np.ndarray:
        return self._array(name)[1].copy()

    def inject(self, name: str, value: Any) -> None:
        """Overwrite a live register's blob; acts after this read the injected values."""
        lbn, array = self._array(name)
        new = np.asarray(value)
        if new.shape != array.shape:
            raise ValueError(f"inject({name!r}): the blob is {array.dtype}{list(array.shape)}; got shape {new.shape}")
        array[...] = new.astype(array.dtype, copy=False)
        self.injections.append((self.acts, lbn))

    # -- recordings --------------------------------------------------------------------------------
    def timeline(self) -> list[TimelineEntry]:
        return list(self.timeline_entries)

    def trace_events(self) -> dict[str, Any]:
        """The recorded acts as Chrome/Perfetto trace JSON (one row per machine:thread)."""
        events = []
        for entry in self.timeline_entries:
            e = entry.event
            actor = self.runtime.actors.get(e.actor_id) or getattr(self.runtime, "remote_actors", {})[e.actor_id]
            task = actor.task
            events.append({
                "name": e.actor_name, "cat": e.task_type, "ph": "X", "pid": task.machine_id, "tid": task.thrd_id,
                "ts": entry.start_s * 1e6, "dur": max(entry.duration_s * 1e6, 0.001),
                "args": {"job": self.plan.job_names[e.job_id], "act_id": e.act_id, "seq": e.seq,
                         "read": [f"r{r}" for r, _ in e.read], "written": [f"r{r}" for r, _ in e.written]},
            })
        threads = {(t.machine_id, t.thrd_id) for t in self.plan.tasks}
        meta = [{"name": "process_name", "ph": "M", "pid": m, "args": {"name": f"machine {m}"}}
                for m in sorted({m for m, _ in threads})]  # one process per machine
        meta += [{"name": "thread_name", "ph": "M", "pid": m, "tid": t, "args": {"name": f"machine {m} thread {t}"}}
                 for m, t in sorted(threads)]
        return {"traceEvents": meta + events, "displayTimeUnit": "ms"}

    def export_trace(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.trace_events()))
        return path

    def export_html(self, path: str | Path) -> Path:
        """A self-contained, script-free HTML record of the run: the Plan, every act, the user jobs' blobs."""
        from .export import export_html

        return export_html(self, path)

    def __repr__(self) -> str:
        state = "finished" if self.finished else f"next: {self.next_actor()}"
        return f"<Debugger {self.desc.job_name}: {self.acts} acts, {state}>"


def _variable_arrays(runtime: Runtime) -> dict[str, np.ndarray]:
    out = {}
    for actor in runtime.actors.values():
        op = actor.task.exec_sequence[0]
        if op.op_type == "variable" and op.name not in out:
            regst = actor.task.produced_regst_desc["out"].regst_desc_id
            out[op.name] = runtime.regsts[regst][0].blobs[op.output_lbns[0]]
    return out


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
