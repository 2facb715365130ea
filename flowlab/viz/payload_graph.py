"""The graph part of a view payload (see ``payload.py``): nodes, a tree of groups, edges, lanes and details,
with the initial collapsed state chosen so that no view starts with more than ``VISIBLE_BUDGET`` visible items.

Grouping follows OneFlow's names: ``flow.scope.namespace`` and ``flow.layers`` join scopes with ``-``, so
``fc3-matmul`` lies in scope ``fc3`` and ``System-AutoTick-SourceTick`` in ``System-AutoTick``. Ops without a
scope that a pass created (autograd's gradient ops) are grouped by that pass, so a deep model's backward half is
one box rather than a column of hundreds of ops; a group with more than ``CHUNK`` nodes of its own is split into
runs of consecutive nodes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

VISIBLE_BUDGET = 300  # the most nodes plus collapsed groups a view shows before the user expands anything
CHUNK = 200  # a group with more nodes of its own is split into runs of this many, so every expand stays bounded
JOB_ORDER = {"user": 0, "push": 1, "pull": 2, "model_io": 3, "main": 4}


class GraphBuilder:
    """Collects one payload graph; ``finish()`` returns the JSON-ready dict of payload.md's Graph."""

    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.groups: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        self.details: dict[str, dict[str, Any]] = {}
        self.lanes: list[str] = []

    def group(self, gid: str, label: str, parent: str | None, kind: str, job_kind: str | None = None) -> str:
        group = {"id": gid, "label": label, "parent": parent, "kind": kind, "collapsed": False}
        if job_kind is not None:
            group["job_kind"] = job_kind  # user | push | pull | model_io | main: which jobs open first
        self.groups.append(group)
        return gid

    def node(self, nid: str, label: str, kind: str, parent: str | None, detail: dict[str, Any] | None = None,
             **extra: Any) -> dict[str, Any]:
        node = {"id": nid, "label": label, "kind": kind, "parent": parent, "classes": [], **extra}
        if detail is not None:
            key = f"d:{nid}"
            self.details[key] = detail
            node["detail"] = key
        self.nodes.append(node)
        return node

    def edge(self, source: str, target: str, kind: str, label: str = "", **extra: Any) -> None:
        self.edges.append({"id": f"e:{len(self.edges)}", "source": source, "target": target, "kind": kind,
                           "label": label, **extra})

    def scoped(self, job_gid: str, names: Sequence[tuple[str, str]]) -> list[str]:
        """Scope groups for one job's ops, given (name, created_by) per op; returns each op's parent group id."""
        scopes = [_scope_of(name, created_by) for name, created_by in names]
        count: dict[tuple[str, ...], int] = defaultdict(int)
        children: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
        direct: dict[tuple[str, ...], int] = defaultdict(int)
        for scope in scopes:
            direct[scope] += 1
            for depth in range(1, len(scope) + 1):
                count[scope[:depth]] += 1
                children[scope[:depth - 1]].add(scope[:depth])
        emitted: dict[tuple[str, ...], str] = {(): job_gid}

        def parent_of(prefix: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
            for depth in range(len(prefix) - 1, -1, -1):
                if prefix[:depth] in emitted:
                    return prefix[:depth], emitted[prefix[:depth]]
            return (), job_gid

        # prefixes in order of first appearance, shallow first: a group is emitted before its children
        ordered = sorted(count, key=len)
        for prefix in ordered:
            if count[prefix] < 2:
                continue  # a scope with one op is not worth a box
            only = children[prefix]
            if direct[prefix] == 0 and len(only) == 1 and count[next(iter(only))] == count[prefix]:
                continue  # System -> AutoTick -> ...: one box "System-AutoTick", not two nested ones
            base, pid = parent_of(prefix)
            gid = f"{job_gid}/s{len(emitted)}"
            emitted[prefix] = self.group(gid, "-".join(prefix[len(base):]), pid, "scope")
        return [parent_of(scope + ("",))[1] for scope in scopes]

    def finish(self, budget: int = VISIBLE_BUDGET) -> dict[str, Any]:
        self._chunk()
        choose_collapsed(self.nodes, self.groups, budget)
        return {"nodes": self.nodes, "groups": self.groups, "edges": self.edges, "lanes": self.lanes,
                "details": self.details}


    def _chunk(self) -> None:
        """Split every group (and the top level) holding more than CHUNK nodes directly into consecutive runs:
        opening a 1,250-task job then shows 7 boxes, not 1,250 nodes."""
        members: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
        for node in self.nodes:
            members[node["parent"]].append(node)
        for parent, nodes in members.items():
            if len(nodes) <= CHUNK:
                continue
            for k in range(0, len(nodes), CHUNK):
                run = nodes[k:k + CHUNK]
                gid = self.group(f"{parent or 'g:top'}/c{k // CHUNK}", f"{run[0]['label']} .. {run[-1]['label']} "
                                 f"({len(run)})", parent, "chunk")
                for node in run:
                    node["parent"] = gid


def _scope_of(name: str, created_by: str) -> tuple[str, ...]:
    parts = name.split("-")
    if len(parts) > 1 and all(parts):
        return tuple(parts[:-1])
    if created_by not in ("user", "system"):
        return (f"({created_by})",)  # e.g. "(autograd)": the ops one pass made, together
    return ()


def visible_count(graph: dict[str, Any]) -> int:
    """How many boxes a view of ``graph`` draws in its initial state (nodes plus collapsed groups)."""
    collapsed = {g["id"] for g in graph["groups"] if g["collapsed"]}
    parent = {g["id"]: g["parent"] for g in graph["groups"]}

    def hidden(gid: str | None) -> bool:  # inside a collapsed group (not being that group)
        while gid is not None:
            if gid in collapsed:
                return True
            gid = parent[gid]
        return False

    shown_groups = sum(1 for g in graph["groups"] if g["collapsed"] and not hidden(g["parent"]))
    return shown_groups + sum(1 for n in graph["nodes"] if not hidden(n["parent"]))


def choose_collapsed(nodes: Sequence[dict[str, Any]], groups: Sequence[dict[str, Any]], budget: int) -> None:
    """Start with every group collapsed, then open groups while the view stays within ``budget`` visible items:
    job by job (user jobs first), level by level inside a job, and sibling groups of equal size (a model's
    layers) all together or not at all, so a deep model opens at layer level rather than with some layers open."""
    size: dict[str | None, int] = defaultdict(int)
    child_groups: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for node in nodes:
        size[node["parent"]] += 1
    for group in groups:
        size[group["parent"]] += 1
        child_groups[group["parent"]].append(group)
        group["collapsed"] = True
    visible = size[None]
    # one root (job) at a time, user jobs first: the user job opens down to its layers before System-Main opens
    for root in sorted(child_groups[None], key=lambda g: JOB_ORDER.get(g.get("job_kind", ""), 5)):
        level = [root]
        while level:
            buckets: dict[tuple[int, str | None], list[dict[str, Any]]] = defaultdict(list)
            for group in level:
                buckets[(size[group["id"]], group["parent"] or group["id"])].append(group)
            next_level: list[dict[str, Any]] = []
            for key in sorted(buckets, key=lambda k: k[0]):
                cost = sum(size[g["id"]] - 1 for g in buckets[key])
                if visible + cost <= budget:
                    visible += cost
                    for group in buckets[key]:
                        group["collapsed"] = False
                        next_level.extend(child_groups[group["id"]])
            level = next_level
