"""The rewrite stepper: ``flow.debug.show_rewrites(session)`` (or a ``Rewrites`` as a cell's value).

Each rewrite is drawn as the compare view draws a diff (debug/comparison.py): the job (or the Plan so far) before
and after it side by side, added / removed / changed in the compare view's colours with its legend. The payload is
a sequence of compare payloads and an index, ``kind: "rewrites"``, under the compare mime type (so every front end
that stores or exports a compare output carries it); the front end (extension/src/rewrites.ts) steps through them
with ← / → (buttons and keys). On the after side, the nodes that feed an added node get the class ``parent`` (the
new nodes' parents, outlined); each step names the function that made it (``source``: path:line and the def line).
``made`` maps every op ("job/op"), task and register a rewrite added to the first rewrite that added it, and each
step's ``made_by`` does the same for the nodes of its after side ("show the rewrite that made this").
"""

from __future__ import annotations

import linecache
import os
from typing import TYPE_CHECKING, Any

from ..debug.comparison import COMPARE_MIME, compare_payload
from .views import PayloadView

if TYPE_CHECKING:  # debug.rewrites draws itself through this module (Rewrites.show)
    from ..debug.rewrites import Rewrite, Rewrites

PARENT = "parent"  # the class of a node that feeds an added one


def _def_line(source: str) -> str:
    path, _, line = source.rpartition(":")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    full = path if os.path.isabs(path) else os.path.join(root, path)
    return linecache.getline(full, int(line)).strip() if line.isdigit() else ""


def _mark_parents(graph: dict[str, Any]) -> None:
    added = {n["id"] for n in graph["nodes"] if "added" in n["classes"]}
    feeding = {e["source"] for e in graph["edges"] if e["target"] in added and e["source"] not in added}
    for node in graph["nodes"]:
        if node["id"] in feeding and PARENT not in node["classes"]:
            node["classes"].append(PARENT)


def _made_by(r: Rewrite, after: Any, made: dict[tuple[str, str], int]) -> dict[str, int]:
    """The after side's node ids -> the rewrite that made the op or task each draws (the payload ids of
    jobset_payload and plan_payload: "o:0:<i>", "t:<task_id>"); traced ops have none. Ops are looked up in their
    own job: an interface op's name is also a system job's op."""
    if r.kind == "job":
        return {f"o:0:{i}": made[(r.job, op.name)] for i, op in enumerate(after.ops) if (r.job, op.name) in made}
    out = {}
    for t in after.tasks:
        label = f"{after.job_names[t.job_id]}/{t.name}" + (f" [{t.parallel_id}]" if t.parallel_id else "")
        if (r.job, label) in made:
            out[f"t:{t.task_id}"] = made[(r.job, label)]
    return out


def _open_groups_of(graph: dict[str, Any], classes: tuple[str, ...]) -> None:
    """Expand every group that holds a node with one of ``classes``: what the rewrite added (and what feeds it),
    or removed, is drawn as its own box, not as a coloured collapsed group."""
    groups = {g["id"]: g for g in graph["groups"]}
    for node in graph["nodes"]:
        if any(c in node["classes"] for c in classes):
            parent = node["parent"]
            while parent is not None and parent in groups:
                groups[parent]["collapsed"] = False
                parent = groups[parent]["parent"]


def step_payload(r: Rewrite, made: dict[tuple[str, str], int] | None = None,
                 cache: dict[int, tuple[Any, str]] | None = None) -> dict[str, Any]:
    """One rewrite as a step: its compare payload (before / after), its name, job, counts and source; with
    ``made`` ((job, name) -> the position of the first rewrite that added it), which rewrite made each node of the
    after side."""
    if r.kind == "plan":
        before: Any = r.before.as_plan()  # type: ignore[union-attr]
        after: Any = r.after.as_plan()  # type: ignore[union-attr]
    else:
        before, after = r.before, r.after
    where = "the Plan" if r.kind == "plan" else r.job
    compare, _ = compare_payload(before, after, labels=(f"before {r.name}", f"after {r.name}"),
                                 title=f"#{r.index} {r.name} on {where}", cache=cache)
    _mark_parents(compare["b"]["graph"])
    _open_groups_of(compare["a"]["graph"], ("removed",))
    _open_groups_of(compare["b"]["graph"], ("added", PARENT))
    return {"index": r.index, "name": r.name, "job": r.job, "kind": r.kind, "source": r.source,
            "source_line": _def_line(r.source), "counts": {"added": len(r.added), "removed": len(r.removed),
                                                            "changed": len(r.changed)},
            "compare": compare, "made_by": _made_by(r, after, made or {})}


def rewrites_payload(rw: Rewrites, index: int = 0) -> dict[str, Any]:
    if not len(rw):
        raise ValueError("show_rewrites: the compile recorded no rewrites")
    if not 0 <= index < len(rw):
        raise IndexError(f"show_rewrites: index {index} is outside the rewrites 0..{len(rw) - 1}")
    # positions in this list (a slice of the rewrites shows some): what the front end steps to
    made: dict[tuple[str, str], int] = {}
    for i, r in enumerate(rw):
        for name in r.added:
            made.setdefault((r.job, name), i)
    cache: dict[int, tuple[Any, str]] = {}  # a pass's after is the next pass's before: drawn once
    steps = [step_payload(r, made, cache) for r in rw]
    by_name: dict[str, int] = {}  # "job/op" names an op and its task: the op's maker comes first, and stays
    for (job, name), i in made.items():
        by_name.setdefault(name if job == "Plan" else f"{job}/{name}", i)
    return {"flowlab_payload": 1, "kind": "rewrites", "title": f"{len(rw)} rewrites, from the traced jobs to the Plan",
            "index": index, "steps": steps, "made": by_name}


class RewritesView(PayloadView):
    """The stepper as an output: the compare mime type (kind "rewrites") and the table as text."""

    def __repr__(self) -> str:
        return f"<rewrites view: {self.payload['title']}>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from ..viz.payload_pack import stored

        return {COMPARE_MIME: stored(self.payload), "text/plain": self.text or repr(self)}


def show_rewrites(rw: Rewrites, index: int = 0) -> RewritesView:
    """A stepper (← / →) through ``rw`` starting at rewrite ``index``."""
    return RewritesView(rewrites_payload(rw, index), text=str(rw))
