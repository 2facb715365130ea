"""Views drawn on a session's Plan: a hang (``flow.debug.show_stuck``) and a job function's Schedule
(``flow.debug.show_schedule``). Both are Plan payloads with a section (viz/payload_sections.py), so every front end
that draws a Plan (JupyterLab's renderer, the widget, a saved notebook, the HTML export) draws them."""

from __future__ import annotations

from typing import Any

from .views import PayloadView, show_plan


def _session_of(what: Any) -> Any:
    if what is None:
        from ..session import default_session

        return default_session()
    return what


def show_stuck(what: Any = None, *, plan: Any = None, job_set: Any = None) -> PayloadView:
    """A hang drawn on the Plan: every blocked actor coloured by what it waits for (in the cycle, a register, a
    section, a machine), the wait-for edges, the cycle opened and in view; a stuck actor's detail pane says what it
    waits for. ``what``: a session (the default one by default) or a ``flow.debug`` Debugger (asked now, as
    ``why_stuck``), a ``HangError`` or a ``WaitGraph``; ``plan`` (and ``job_set``) where the graph is of a Plan
    the default session did not compile (a ``Runtime(plan)`` of one's own)."""
    from ..debug.stuck import WaitGraph, why_stuck

    graph = getattr(what, "graph", what)  # a HangError carries its graph
    owner = None
    if not isinstance(graph, WaitGraph):
        owner = _session_of(what)
        graph = why_stuck(owner)
    if plan is None:
        source = owner if owner is not None else _session_of(None)
        plan = getattr(source, "plan", None)
        job_set = job_set if job_set is not None else getattr(getattr(source, "session", source), "job_set", None)
    if plan is None:
        raise ValueError("show_stuck: no Plan to draw the wait-for graph on; pass plan= (the Plan that ran)")
    if not graph.blocked or not (graph.pending or graph.silent):
        raise ValueError("show_stuck: nothing is stuck (" + str(graph).splitlines()[0] + ")")
    return show_plan(plan, job_set, stuck=graph)


def show_schedule(session: Any = None, job_fn: Any = None) -> PayloadView:
    """A job function's captured Schedule beside the Plan: its steps in order, grouped into fused segments and into
    lanes (a row per lane), each linked to its Plan task, and the execution policy's choice above them
    (``print(session.execution)``). ``flow.debug.show_schedule(job_fn)`` uses the default session."""
    if job_fn is None and hasattr(session, "__flowlab_function_desc__"):
        session, job_fn = None, session
    session = _session_of(session)
    payload = schedule_plan_payload(session, job_fn)
    text = [s["text"] for s in payload["schedule"]["schedules"]]
    return PayloadView(payload, text="\n".join([payload["title"], payload["schedule"]["execution"], *text]))


def schedule_plan_payload(session: Any, job_fn: Any) -> dict[str, Any]:
    """The Plan payload of ``session`` with ``job_fn``'s Schedules as its ``schedule`` section (a function or its
    FunctionDesc); an error that says why when there is none to show."""
    from ..viz.payload import plan_payload
    from ..viz.payload_devices import lane_names
    from ..viz.payload_sections import schedule_section

    if job_fn is None:
        raise TypeError("show_schedule(session, job_fn): which job function's Schedule to show")
    data = session.schedule_payload(job_fn)
    desc = getattr(job_fn, "__flowlab_function_desc__", job_fn)
    name = getattr(desc, "job_name", job_fn)
    if not data["schedules"]:
        raise ValueError(f"show_schedule: {name} has no captured Schedule yet: call it once (the first call from an "
                         "idle runtime is captured), with replay on; the policy now:\n" + str(session.execution))
    payload = plan_payload(session.plan, session.job_set, title=f"Schedule of {name} on its Plan")
    lanes = lane_names(session.plan.tasks)
    payload["schedule"] = schedule_section(data, str(session.execution), payload["graph"], lanes)
    return payload


def show_provenance(what: Any = None) -> PayloadView:
    """The Plan with provenance: every task's detail pane says which rewrite made it, "made by #k <Rewrite>", a
    link that opens the rewrites stepper (``flow.debug.show_rewrites``) at that rewrite with the task selected.
    ``what``: a session (the default one by default), a CompileResult or a %%flowjob result."""
    from ..debug.rewrites import rewrites
    from ..viz.payload_sections import provenance_section
    from .rewrites_view import rewrites_payload

    source = _session_of(what)
    rw = rewrites(source)
    view = show_plan(rw.plan, getattr(source, "job_set", None), title=f"Plan: {len(rw.plan.tasks)} tasks · made by")
    plan = rw.plan
    ops = {f"t:{t.task_id}": f"{plan.job_names[t.job_id]}/{t.exec_sequence[0].name}" for t in plan.tasks
           if t.exec_sequence}
    view.payload["provenance"] = provenance_section(rewrites_payload(rw, len(rw) - 1), view.payload["graph"], ops)
    return view
