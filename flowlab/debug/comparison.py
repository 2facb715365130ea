"""Two compilations, or a job before and after a pass, side by side: ``flow.debug.compare``.

``compare(a, b)`` takes two Plans (or two sessions / ``%%flowjob`` results: their Plans), two Jobs or two
JobSets; ``compare(record)`` takes one pass record (``session.passes``), ``compare_pass(session, "autograd")`` finds
one (the notebook hands them on as ``show_diff`` / ``show_pass``). The value, a ``Comparison``, prints the diff as
text and is, as a notebook output, an ``application/vnd.flowlab.compare+json`` payload: the two sides as ordinary
view payloads (``a``: before, ``b``: after) with their marks as node classes ("removed"/"changed" on the left,
"added"/"changed" on the right; "out-<mark>" on a task whose produced register is marked), ``pairs`` (the payload
ids of each matched thing, so a selection on one side selects its match) and the unmatched and changed things
listed with labels.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..ir import Job, JobSet, Plan
from ..viz.payload import jobset_payload, plan_payload
from .diff import diff as plan_diff
from .job_diff import diff_jobs

COMPARE_MIME = "application/vnd.flowlab.compare+json"


def _plan_of(side: Any) -> tuple[Plan, JobSet | None] | None:
    if isinstance(side, Plan):
        return side, None
    plan, job_set = getattr(side, "plan", None), getattr(side, "job_set", None)
    if isinstance(plan, Plan):
        return plan, job_set if isinstance(job_set, JobSet) else None
    session = getattr(side, "session", None)  # a %%flowjob result
    return _plan_of(session) if session is not None and session is not side else None


def _label_of(graph: Mapping[str, Any]) -> dict[str, str]:
    return {n["id"]: n["label"] for n in graph["nodes"]}


def _mark(graph: Mapping[str, Any], marks: Mapping[str, str]) -> None:
    for node in graph["nodes"]:
        mark = marks.get(node["id"])
        if mark is not None and mark not in node["classes"]:
            node["classes"].append(mark)


def _plans(a: Plan, job_set_a: JobSet | None, b: Plan, job_set_b: JobSet | None) -> tuple[dict[str, Any], str]:
    d = plan_diff(a, b)
    pa = plan_payload(a, job_set_a, marks=d.marks_a)
    pb = plan_payload(b, job_set_b, marks=d.marks_b)
    la, lb = _label_of(pa["graph"]), _label_of(pb["graph"])
    items = []
    for what, changes in (("task", d.tasks), ("block", d.blocks), ("register", d.registers)):
        prefix = {"task": "t", "block": "b", "register": "r"}[what]
        for c in changes:
            ida = f"{prefix}:{c.id_a}" if c.id_a is not None else None
            idb = f"{prefix}:{c.id_b}" if c.id_b is not None else None
            if what == "register":  # a register is drawn on its producer's box
                ida, idb = _producer(a, c.id_a), _producer(b, c.id_b)
            if (ida is None or ida in la) and (idb is None or idb in lb):
                items.append(_item(what, c.status, c.label, ida, idb, str(c).strip()[2:]))
    return {"a": pa, "b": pb, "pairs": [list(p) for p in d.pairs if p[0] in la and p[1] in lb], "items": items}, str(d)


def _producer(plan: Plan, regst_id: int | None) -> str | None:
    return None if regst_id is None else f"t:{plan.regst_descs[regst_id].producer_task_id}"


def _item(what: str, status: str, label: str, a: str | None, b: str | None, summary: str) -> dict[str, Any]:
    return {"what": what, "status": status, "label": label, "a": a, "b": b, "summary": summary}


def _side(side: Job | JobSet, cache: dict[int, tuple[Any, str]] | None) -> tuple[JobSet, dict[str, Any]]:
    """The side as a JobSet and its payload; with ``cache`` (a sequence of diffs where one's after is the next
    one's before), each Job's payload is built once and handed out as a fresh copy (the marks write into it)."""
    job_set = side if isinstance(side, JobSet) else JobSet((side,))
    if cache is None:
        return job_set, jobset_payload(job_set)
    if id(side) not in cache:
        cache[id(side)] = (side, json.dumps(jobset_payload(job_set)))  # the side kept alive: its id stays its own
    return job_set, json.loads(cache[id(side)][1])


def _jobs(a: Job | JobSet, b: Job | JobSet, cache: dict[int, tuple[Any, str]] | None = None
          ) -> tuple[dict[str, Any], str]:
    d = diff_jobs(a, b)
    (set_a, pa), (set_b, pb) = _side(a, cache), _side(b, cache)
    # jobset_payload names op j's i-th op "o:j:i"
    ids_a = {(job.name, op.name): f"o:{j}:{i}" for j, job in enumerate(set_a) for i, op in enumerate(job.ops)}
    ids_b = {(job.name, op.name): f"o:{j}:{i}" for j, job in enumerate(set_b) for i, op in enumerate(job.ops)}
    marks_a: dict[str, str] = {}
    marks_b: dict[str, str] = {}
    items = []
    for c in d.changes:
        ida = ids_a.get((c.job, c.op)) if c.status != "added" else None
        idb = ids_b.get((c.job, c.op)) if c.status != "removed" else None
        if c.status == "changed":  # a pass may rename the job; the op's pair says where it is on each side
            ida = next((ids_a[(ja, c.op)] for ja, jb, op in d.pairs if jb == c.job and op == c.op), None)
        if ida:
            marks_a[ida] = c.status
        if idb:
            marks_b[idb] = c.status
        items.append(_item("op", c.status, f"{c.job}/{c.op}", ida, idb, str(c).strip()[2:]))
    _mark(pa["graph"], marks_a)
    _mark(pb["graph"], marks_b)
    pairs = [[ids_a[(ja, op)], ids_b[(jb, op)]] for ja, jb, op in d.pairs]
    return {"a": pa, "b": pb, "pairs": pairs, "items": items}, str(d)


def compare_payload(a: Any, b: Any, *, labels: Sequence[str] = ("before", "after"),
                    title: str | None = None, cache: dict[int, tuple[Any, str]] | None = None
                    ) -> tuple[dict[str, Any], str]:
    """The compare payload of two Plans (sessions, results), Jobs or JobSets, and the diff as text; ``cache`` (a
    dict kept across calls) builds each Job's view payload once over many calls."""
    plan_a, plan_b = _plan_of(a), _plan_of(b)
    if plan_a is not None and plan_b is not None:
        body, text = _plans(*plan_a, *plan_b)
        what = "Plans"
    elif isinstance(a, (Job, JobSet)) and isinstance(b, (Job, JobSet)):
        body, text = _jobs(a, b, cache)
        what = "jobs"
    else:
        raise TypeError("show_diff compares two Plans (or sessions / %%flowjob results), two Jobs or two JobSets, "
                        f"or takes one pass record; got {type(a).__name__} and {type(b).__name__}")
    counts = {s: sum(i["status"] == s for i in body["items"]) for s in ("added", "removed", "changed")}
    head = ", ".join(f"{n} {s}" for s, n in counts.items())
    title = title or f"compare {what}: {labels[0]} / {labels[1]} ({head})"
    return {"flowlab_payload": 1, "kind": "compare", "title": title, "labels": list(labels), **body,
            "counts": counts}, text


@dataclass(frozen=True)
class Comparison:
    """A diff of two compilations: ``print`` it for the text, ``.payload`` for the compare payload; as a cell's
    value it is the compare mime type (drawn by flowlab's front end; a saved notebook keeps it) and the text."""

    payload: dict[str, Any]
    text: str = ""

    def __str__(self) -> str:
        return self.text or repr(self)

    def __repr__(self) -> str:
        return f"<{self.payload['kind']} view: {self.payload['title']}>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from ..viz.payload_pack import stored

        return {COMPARE_MIME: stored(self.payload), "text/plain": self.text or repr(self)}


def compare(a: Any, b: Any = None, *, labels: Sequence[str] | None = None, title: str | None = None) -> Comparison:
    """Two compilations side by side (``compare(plan_a, plan_b)``), or one pass record's job before and after
    (``compare(session.passes[3])``); marks: added, removed, changed, with a legend, linked selection and pan."""
    if b is None and hasattr(a, "before") and hasattr(a, "after"):
        labels = labels or (f"before {a.name}", f"after {a.name}")
        a, b = a.before, a.after
    if b is None:
        raise TypeError(f"show_diff takes two things to compare, or one pass record; got only a {type(a).__name__}")
    payload, text = compare_payload(a, b, labels=labels or ("before", "after"), title=title)
    return Comparison(payload, text=f"{payload['title']}\n{text}")


def compare_pass(session: Any, name: str, job: str | None = None) -> Comparison:
    """The job before and after the pass ``name`` (e.g. "autograd"), from ``session.passes``; ``job`` picks the job
    where the pass ran on several."""
    passes = list(getattr(session, "passes", session))
    found = [r for r in passes if r.name == name and (job is None or r.job_name == job)]
    if not found:
        names = sorted({f"{r.name} ({r.job_name})" for r in passes})
        raise KeyError(f"show_pass: no pass {name!r}" + (f" on job {job!r}" if job else "")
                       + f"; the recorded passes are {', '.join(names) or 'none'}")
    if len(found) > 1 and len({r.job_name for r in found}) > 1:
        raise KeyError(f"show_pass: pass {name!r} ran on jobs {', '.join(r.job_name for r in found)}; pick one "
                       "with job=")
    return compare(found[0])
