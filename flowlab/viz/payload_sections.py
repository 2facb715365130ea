"""Optional sections of a Plan payload that other views draw on the Plan (the front end's stuck.ts, schedview.ts):

- ``stuck``: a hang's wait-for graph (runtime/hang.py's ``WaitGraph``): every blocked actor with the kind of its
  wait (``cycle``, ``register``, ``section``, ``machine``), its text, and the wait-for edges (actor -> what it
  waits for), all by Plan payload node id (``t:<task id>``);
- ``schedule``: a job function's captured Schedules (call_path.schedule_payload) with each step's Plan node id,
  and the execution policy's text;
- ``provenance``: the rewrite that made each Plan node, and the rewrites stepper's payload to open at it.

Each is checked against the payload's graph: a section naming a node the Plan view lacks is an error that says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# what the legend says for each kind of wait, in the order it lists them
# the box fills of extension/src/stuck.ts's STUCK_COLORS (the static picture mirrors the live view); "input" has none
STUCK_FILLS = {"cycle": "#f6a8a8", "register": "#ffd39b", "section": "#d9c3f0", "machine": "#a9cdf2"}
STUCK_KINDS = {"cycle": "in the cycle", "register": "waits for a register", "section": "waits for a section",
               "machine": "waits for a machine", "input": "waits for input upstream"}


def _known(graph: Mapping[str, Any], ids: list[str], what: str) -> None:
    nodes = {n["id"] for n in graph["nodes"]}
    unknown = [i for i in ids if i not in nodes]
    if unknown:
        sample = ", ".join(sorted(nodes)[:3])
        raise KeyError(f"{what} names {len(unknown)} tasks this Plan view does not have, e.g. {unknown[0]!r} (its "
                       f"node ids look like {sample}): draw it on the Plan that ran (show_plan(plan, ..., stuck=...) "
                       "with the runtime's plan)")


def stuck_section(wait_graph: Any, plan: Any, graph: Mapping[str, Any]) -> dict[str, Any]:
    """``wait_graph`` (a WaitGraph) as the Plan view draws it. An actor's kind: ``cycle`` when it is in the cycle,
    else ``machine`` when it waits for a task on another machine, ``section`` for the main job's critical-section
    actors (their own readiness: no register edge), ``register`` for the rest of the stuck ones (they hold part of
    what they need: the wavefront), and ``input`` for those that hold nothing and wait upstream (the WaitGraph's
    text lists them last; the view draws them faintly)."""
    machine_of = {t.task_id: t.machine_id for t in plan.tasks}
    name_of = {t.task_id: t.name for t in plan.tasks}
    other = [b for b in wait_graph.blocked if name_of.get(b.actor_id, b.actor) != b.actor]
    if other:  # task ids repeat across Plans: the names tell a graph of another Plan
        b = other[0]
        raise KeyError(f"this wait-for graph names task {b.actor_id} {b.actor!r}, which is "
                       f"{name_of[b.actor_id]!r} in this Plan: draw it on the Plan that ran "
                       "(show_stuck(err, plan=...) with the runtime's plan)")
    ring = set(wait_graph.cycle_ids)
    actors: dict[str, dict[str, Any]] = {}
    edges: list[list[Any]] = []
    for b in wait_graph.blocked:
        node = f"t:{b.actor_id}"
        if b.actor_id in ring:
            kind = "cycle"
        elif any(machine_of.get(w, b.machine) != b.machine for w in b.waits_on):
            kind = "machine"
        elif not b.waits_on and "section" in b.reason:
            kind = "section"
        elif b.holds:
            kind = "register"
        else:
            kind = "input"
        actors[node] = {"kind": kind, "name": b.actor, "job": b.job, "machine": b.machine, "thread": b.thread,
                        "acts": b.act_id, "holds": b.holds, "text": str(b), "reason": b.reason,
                        "waits_on": [f"t:{w}" for w in b.waits_on]}
        edges += [[node, f"t:{w}", b.actor_id in ring and w in ring] for w in b.waits_on]
    _known(graph, [*actors, *(e[1] for e in edges)], "this wait-for graph")
    counts = {k: sum(1 for a in actors.values() if a["kind"] == k) for k in STUCK_KINDS}
    return {"text": str(wait_graph), "cycle": [f"t:{i}" for i in wait_graph.cycle_ids], "actors": actors,
            "edges": edges, "kinds": STUCK_KINDS, "counts": counts, "pending": list(wait_graph.pending),
            "silent": list(wait_graph.silent)}


def stuck_fills(payload: Mapping[str, Any]) -> dict[str, str]:
    """Node id -> fill for a payload's hang (none: {}), and the cycle's colour on every group holding a cycle actor,
    so that the static picture (payload_svg, nbconvert) shows the cycle even where its jobs are collapsed."""
    section = payload.get("stuck")
    if not section:
        return {}
    fills = {node: STUCK_FILLS[a["kind"]] for node, a in section["actors"].items() if a["kind"] in STUCK_FILLS}
    parent = {g["id"]: g["parent"] for g in payload["graph"]["groups"]}
    node_parent = {n["id"]: n["parent"] for n in payload["graph"]["nodes"]}
    for node in section["cycle"]:
        group = node_parent.get(node)
        while group is not None:
            fills[group] = STUCK_FILLS["cycle"]
            group = parent.get(group)
    return fills


def schedule_section(schedules: Mapping[str, Any], execution_text: str, graph: Mapping[str, Any],
                     lane_label: Mapping[tuple[int, int], str]) -> dict[str, Any]:
    """``schedules`` (``session.schedule_payload(job_fn)``) with each step's Plan node id and each lane's name
    (``lane_label``: (machine, thread) -> what the Plan view's lanes call it); ``execution_text`` is
    ``print(session.execution)``'s."""
    out = []
    for sched in schedules["schedules"]:
        steps = [{**s, "node": f"t:{s['task_id']}"} for s in sched["steps"]]
        _known(graph, [s["node"] for s in steps], "this schedule")
        lanes = [{**lane, "label": lane_label.get(tuple(lane["thread"]), f"thread {lane['thread'][1]}")}
                 for lane in sched["lanes"]]
        out.append({k: v for k, v in sched.items() if k not in ("steps", "lanes")} | {"steps": steps, "lanes": lanes})
    return {"execution": execution_text, "schedules": out}


def provenance_section(rewrites: Mapping[str, Any], graph: Mapping[str, Any],
                       ops: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Which rewrite made each node of the Plan view: the rewrites payload's last step is the final Plan, whose
    ``made_by`` maps its node ids to a step (the Plan stage that made the task). ``ops`` (node id -> "job/op", the
    op a task runs) adds the job rewrite that made the op (``op_made``: node id -> [step, the op's node id on that
    step's after side]), for the ops a pass added (autograd, optimizer, ticks); the stepper's payload comes along."""
    last = rewrites["steps"][-1]
    if last["kind"] != "plan":
        raise ValueError("provenance on a Plan needs the rewrites up to the Plan (flow.debug.rewrites(session)); "
                         f"these end at {last['name']} on {last['job']}")
    made = dict(last["made_by"])
    _known(graph, list(made), "these rewrites")
    op_made: dict[str, list[Any]] = {}
    for node, job_op in (ops or {}).items():
        at = rewrites["made"].get(job_op)
        step = rewrites["steps"][at] if at is not None else None
        if step is None or step["kind"] != "job":
            continue
        op = job_op.split("/", 1)[1]
        target = next((n["id"] for n in step["compare"]["b"]["graph"]["nodes"] if n["label"] == op), None)
        if target is not None:
            op_made[node] = [at, target]
    steps = [{"index": s["index"], "name": s["name"], "job": s["job"]} for s in rewrites["steps"]]
    return {"made_by": made, "op_made": op_made, "steps": steps, "rewrites": dict(rewrites)}
