"""The session's call path below ``Session.lazy_run``: which executor a call goes to, from the session's
ExecutionPolicy (runtime/policy.py, ``session.execution``), and what a notebook reads about it.

``lazy_run`` first tries the job function's generated call (replay/callgen.py, made here once the policy takes
callgen and the function's schedules are fused and compiled); it returns ``MISS`` when the general path must run
the call: the runtime's ``run_call``, which hands it to the replay layer when the policy attached one (replay,
fused segments, lanes), else steps the protocol (on OS threads when the policy says so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .job_call import call_result, dispatch_watches

if TYPE_CHECKING:
    from .frontend.function import FunctionDesc
    from .ir import Schedule
    from .session import Session

MISS = object()  # what a generated call (replay/callgen.py) returns when the general path must run the call


def generate_call(session: Session, desc: FunctionDesc, schedule: Any, running: Any) -> None:
    """Generate the call of ``desc`` over its fused schedules (replay/callgen.py) once ``schedule``, one of them,
    is compiled; later calls that find the runtime at one of their start states run it. ``running``: the
    session's RUNNING status, which the generated call checks by identity."""
    from .replay import callgen

    if schedule.key != desc.launch_names or not callgen.ready(schedule):
        return  # another job's (a watch handler called it), or a segment still compiling: a later call
    execution = session.execution
    if execution is not None and not execution.callgen:
        schedule.callgen = f"the execution policy declines callgen: {execution.why('callgen')}"
        return
    if desc.signature.arg_structure is not None:  # the generated check takes one array per parameter
        schedule.callgen = "a Tuple[...] parameter"
        return
    signature, structure, key = desc.signature, desc.return_structure, desc.launch_names
    one = type(structure) is int and signature.returns.kind == "numpy" and not signature.is_callback
    guard = session._snapshots[key]
    site = callgen.CallSite(
        desc.job_name, tuple(name for name, _ in signature.params), signature.placeholder_specs,
        structure if one else None, lambda pulled: call_result(desc, pulled),
        lambda watched, result: dispatch_watches(session.watch_handlers, desc, watched, result),
        guard, lambda: session._cancel(guard), session, running, MISS,
        signature.pieces(desc.device_count))
    call = callgen.generate_call(site, session.runtime.layer, key)  # type: ignore[union-attr, arg-type]
    if call is not None:
        session.generated_calls[desc.job_name] = call
        session._fast_calls[id(desc)] = call.fn


def schedules_of(session: Session, job_fn: Any) -> list[Any]:
    """The captured calls (replay/capture.CapturedCall) of a job function in ``session``'s runtime, the one
    replayed last first; [] before its first call, or when no replay layer runs the session's calls."""
    desc = getattr(job_fn, "__flowlab_function_desc__", job_fn)  # a @flow.global_function, or its desc
    name = getattr(desc, "job_name", None)
    if not isinstance(name, str) or session.function_descs.get(name) is not desc:
        known = ", ".join(session.function_descs) or "none"
        raise ValueError(f"{job_fn!r} is not a job function of this session (its job functions: {known})")
    layer = getattr(session.runtime, "layer", None)
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
