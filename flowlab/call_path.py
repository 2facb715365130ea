"""The session's executors (runtime/executor.py), made from its ExecutionPolicy (runtime/policy.py,
``session.execution``), and what a notebook reads about the run path.

``make_executor`` is the one place an executor is chosen: Ray machines (flowlab.distributed), else the replay
executor when the policy takes replay (wrapped by the generated-call executor when it takes callgen), else
protocol stepping (on OS threads when the policy says so). The session hands each call to it (``run``) and reads
``entries`` for a job function's generated call; nothing of the generated calls is the session's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from .job_call import call_result, dispatch_watches

if TYPE_CHECKING:
    from .frontend.function import FunctionDesc
    from .ir import Schedule
    from .runtime import Runtime
    from .runtime.executor import Call, Executor
    from .session import Session


def make_executor(session: Session, runtime: Runtime) -> Executor:
    """The executor of ``runtime``'s calls, as ``session.execution`` says (``runtime`` is in this process; Ray's
    executor is made with its machines, distributed.RayExecutor)."""
    from .runtime.executor import ProtocolExecutor

    execution = session.execution
    assert execution is not None
    if not execution.replay:  # flag off, a GPU plan (its streams order it): runtime/policy.py says why
        return ProtocolExecutor(runtime)
    from .replay.executor import ReplayExecutor

    replay = ReplayExecutor(runtime, fuse=execution.fuse, lanes=execution.lanes, execution=execution)
    # callgen declined only because the calls replay on lanes: taken if the lanes lose their trial (policy.py)
    return CallgenExecutor(replay, session) if execution.callgen or execution.callgen_without_lanes else replay


class CallgenExecutor:
    """The replay executor, and for each job function whose schedules it fused and compiled, the function's whole
    call as one generated Python function (replay/callgen.py) in ``entries``, which the session calls with the
    arguments. A generated function hands a call it does not take to the session's general path, which comes
    back here (``run``): the replay executor runs it, and this one generates again once a schedule is ready."""

    def __init__(self, replay: Any, session: Session) -> None:
        self.replay, self.runtime, self.session = replay, replay.runtime, session
        self.layer = replay.layer
        self.entries: dict[int, Callable[[tuple[Any, ...], dict[str, Any]], Any]] = {}
        self.generated: dict[str, Any] = {}  # by job name: GeneratedCall (its .source, .runs)

    @property
    def name(self) -> str:
        """callgen, or the replay's rung while the policy waits on the lanes' trial or the lanes won it."""
        execution = self.session.execution
        return "callgen" if execution is None or execution.callgen else self.replay.name

    def run(self, call: Call) -> None:
        self.replay.run(call)
        schedule = self.layer.last  # the schedule a replay ran last
        if call.desc is not None and schedule is not None and schedule.callgen is None and \
                schedule.fused is not None:
            self.generate(call.desc, schedule)

    def generate(self, desc: FunctionDesc, schedule: Any) -> None:
        """Generate the call of ``desc`` over its fused schedules once ``schedule``, one of them, is compiled;
        later calls that find the runtime at one of their start states run it."""
        from .replay import callgen

        if schedule.key != desc.launch_names or not callgen.ready(schedule):
            return  # another job's (a watch handler called it), or a segment still compiling: a later call
        session = self.session
        execution = session.execution
        if execution is not None and not execution.callgen:  # lanes kept by their trial (runtime/policy.py)
            schedule.callgen = f"the execution policy declines callgen: {execution.why('callgen')}"
            return
        if desc.signature.arg_structure is not None:  # the generated check takes one array per parameter
            schedule.callgen = "a Tuple[...] parameter"
            return
        signature, structure, key = desc.signature, desc.return_structure, desc.launch_names
        # type(session.status).RUNNING: SessionStatus.RUNNING without importing the session (it imports this module)
        one = type(structure) is int and signature.returns.kind == "numpy" and not signature.is_callback
        guard = session._snapshots[key]
        site = callgen.CallSite(
            desc.job_name, tuple(name for name, _ in signature.params), signature.placeholder_specs,
            structure if one else None, lambda pulled: call_result(desc, pulled),
            lambda watched, result: dispatch_watches(session.watch_handlers, desc, watched, result),
            guard, lambda: session._cancel(guard), session, type(session.status).RUNNING,
            partial(session.run_general, desc), signature.pieces(desc.device_count))
        generated = callgen.generate_call(site, self.layer, key)
        if generated is not None:
            self.generated[desc.job_name] = generated
            self.entries[id(desc)] = generated.fn

    def close(self) -> None:
        self.replay.close()

    def shutdown(self) -> None:
        self.entries.clear()  # the generated calls hold the session: no cycle left behind
        self.generated.clear()

    def __str__(self) -> str:
        made = ", ".join(f"{name} ({call.runs} calls)" for name, call in self.generated.items()) or "none yet"
        return f"callgen: a generated call per fused job function ({made}), over {self.replay}"

    def __repr__(self) -> str:
        return f"<CallgenExecutor over {self.replay!r}>"


def schedules_of(session: Session, job_fn: Any) -> list[Any]:
    """The captured calls (replay/capture.CapturedCall) of a job function in ``session``'s runtime, the one
    replayed last first; [] before its first call, or when no replay layer runs the session's calls."""
    desc = getattr(job_fn, "__flowlab_function_desc__", job_fn)  # a @flow.global_function, or its desc
    name = getattr(desc, "job_name", None)
    if not isinstance(name, str) or session.function_descs.get(name) is not desc:
        known = ", ".join(session.function_descs) or "none"
        raise ValueError(f"{job_fn!r} is not a job function of this session (its job functions: {known})")
    layer = getattr(session.executor, "layer", None)
    key = desc.launch_names
    if layer is None or not key:
        return []
    found = [c for c in layer.schedules.values() if c.key == key]
    last = layer.last
    found.sort(key=lambda c: c is not last)
    return found


def schedule_of(session: Session, job_fn: Any) -> Schedule | None:
    """The Schedule IR of the job function's call the replay layer ran last (or captured), with its lowering
    (fused segments, lanes); None before it is captured or when the policy takes no replay."""
    found = schedules_of(session, job_fn)
    return found[0].ir if found else None


def schedule_payload(session: Session, job_fn: Any) -> dict[str, Any]:
    """What a front-end view of a job function's run path needs, as JSON-ready data: the execution policy, and
    each of the function's schedules (its steps, delta, segments and lanes, and what runs it now)."""
    execution = session.execution
    out: dict[str, Any] = {"execution": execution.to_payload() if execution is not None else None, "schedules": []}
    for captured in schedules_of(session, job_fn):
        ir = captured.ir
        out["schedules"].append({
            "key": list(ir.key), "acts": ir.acts, "replays": captured.replays, "text": str(ir),
            "runs_on": runs_on(captured),
            "steps": [{"task_id": s.task_id, "name": s.name, "op_type": s.op_type, "task_type": s.task_type,
                       "thread": [s.machine_id, s.thrd_id], "reads": [list(r) for r in s.reads],
                       "writes": [list(r) for r in s.writes], "section": s.section} for s in ir.steps],
            "segments": [list(seg) for seg in ir.segments],
            "lanes": [{"thread": list(k), "steps": list(ix)} for k, ix in ir.lanes],
        })
    return out


def runs_on(captured: Any) -> str:
    """Which executor runs a captured call now: callgen, lanes, fused or replay."""
    if captured.callgen == "generated":
        return "callgen"
    if captured.lanes is not None:
        return "lanes"
    return "fused" if captured.fused is not None else "replay"
