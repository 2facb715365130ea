"""A bounded static picture of a view payload: the DOT (and SVG) of its initial state, groups drawn as clusters
when open and as one box (with its node count) when collapsed, edges into a collapsed group aggregated.

This is the ``image/svg+xml`` fallback of every flowlab output (nbconvert, GitHub, front ends without the
flowlab renderer). Graphviz takes minutes on a 1,500-node Plan, so the picture never holds more than
``SVG_BUDGET`` boxes: when the payload's initial state shows more, the deepest open groups are closed first.
Every SVG id starts with ``id_prefix``; give each output its own, so two pictures in one page never share ids.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .dotsyntax import defaults_stmt, edge_stmt, node_stmt
from .payload_graph import choose_collapsed

SVG_BUDGET = 60  # boxes: a static picture is the overview; the interactive view opens the rest
SVG_EDGE_BUDGET = 100  # Graphviz's time grows fast with edges between clusters (260 of them took 9 s)
FONT = "Helvetica"
EDGE_STYLE = {
    "data": {"color": "gray15"},
    "ctrl": {"color": "gray65", "style": "dashed"},
    # not a layout constraint: push -> block -> user -> block -> pull makes cycles between job clusters, on
    # which Graphviz's ranking fails ("trouble in init_rank")
    "shared_mem": {"color": "#c92a2a", "style": "bold,dotted", "penwidth": "1.5", "constraint": "false"},
}
NODE_FILL = {"op": "#e7f5ff", "task": "#e7f5ff", "interface": "#fff3bf", "memblock": "#ffe3e3", "regst": "#f1f3f5"}


def bounded_state(graph: dict[str, Any], budget: int = SVG_BUDGET,
                  edge_budget: int = SVG_EDGE_BUDGET) -> set[str]:
    """The ids of the groups drawn collapsed: the payload's own rule (user jobs open first, layers all together
    or not at all) with a static picture's smaller budget; then, while the picture has more than
    ``edge_budget`` edges (a deep model's layers each talk to its backward half), the deepest open groups close."""
    groups = [dict(g) for g in graph["groups"]]
    choose_collapsed(graph["nodes"], groups, budget)
    collapsed = {g["id"] for g in groups if g["collapsed"]} | {g["id"] for g in graph["groups"] if g["collapsed"]}
    parent = {g["id"]: g["parent"] for g in graph["groups"]}

    def depth(gid: str) -> int:
        d = 0
        while parent[gid] is not None:
            gid, d = parent[gid], d + 1
        return d

    for gid in sorted((g["id"] for g in groups if g["id"] not in collapsed), key=lambda gid: -depth(gid)):
        if len(_edges(graph, collapsed, parent)) <= edge_budget:
            break
        collapsed.add(gid)
    return collapsed


def _shown_as(item_parent: str | None, own: str, collapsed: set[str], parent: dict[str, str | None]) -> str:
    """The outermost collapsed group holding an item, or the item itself."""
    rep, gid = own, item_parent
    while gid is not None:
        if gid in collapsed:
            rep = gid
        gid = parent[gid]
    return rep


def _edges(graph: dict[str, Any], collapsed: set[str], parent: dict[str, str | None]
           ) -> dict[tuple[str, str, str], list[str]]:
    """(shown source, shown target, kind) -> labels of the payload edges drawn as that one edge."""
    node_parent = {n["id"]: n["parent"] for n in graph["nodes"]}
    seen: dict[tuple[str, str, str], list[str]] = {}
    for edge in graph["edges"]:
        src = _shown_as(node_parent.get(edge["source"]), edge["source"], collapsed, parent)
        dst = _shown_as(node_parent.get(edge["target"]), edge["target"], collapsed, parent)
        if src != dst:
            seen.setdefault((src, dst, edge["kind"]), []).append(edge["label"])
    for src, dst, _kind in [k for k in seen if k[2] == "ctrl"]:
        if (src, dst, "data") in seen:
            del seen[(src, dst, "ctrl")]  # the data edge already orders them
    return seen


def payload_dot(payload: dict[str, Any], *, id_prefix: str = "", budget: int = SVG_BUDGET) -> str:
    """DOT for the payload's graph in its bounded initial state (see the module docstring)."""
    graph = payload["graph"]
    collapsed = bounded_state(graph, budget)
    parent = {g["id"]: g["parent"] for g in graph["groups"]}
    ident: dict[str, str] = {}
    members: dict[str | None, list[str]] = defaultdict(list)  # open group (or None) -> its DOT statements
    children: dict[str | None, list[str]] = defaultdict(list)  # open group -> its open child groups
    counts: dict[str, int] = defaultdict(int)
    for node in graph["nodes"]:
        gid = node["parent"]
        while gid is not None:
            counts[gid] += 1
            gid = parent[gid]
    for group in graph["groups"]:
        gid = group["id"]
        if _shown_as(group["parent"], gid, collapsed, parent) != gid:
            continue  # inside a collapsed group
        ident[gid] = f"n{len(ident)}"
        if gid in collapsed:
            members[group["parent"]].append(node_stmt(ident[gid], {
                "id": id_prefix + gid, "label": f"{group['label']}\n{counts[gid]} nodes", "class": "group collapsed",
                "shape": "box3d", "style": "filled", "fillcolor": "#f1f3f5", "tooltip": group["label"]}))
        else:
            children[group["parent"]].append(gid)
    for node in graph["nodes"]:
        if _shown_as(node["parent"], node["id"], collapsed, parent) != node["id"]:
            continue
        ident[node["id"]] = f"n{len(ident)}"
        label = node["label"] + (f"\n{node['type']}" if node.get("type") else "")
        members[node["parent"]].append(node_stmt(ident[node["id"]], {
            "id": id_prefix + node["id"], "label": label, "class": " ".join([node["kind"], *node["classes"]]),
            "fillcolor": NODE_FILL.get(node["kind"], "#ffffff"), "tooltip": node["label"]}))
    labels = {g["id"]: g["label"] for g in graph["groups"]}

    def emit(gid: str | None, depth: int) -> list[str]:
        pad = "  " * depth
        lines = [pad + stmt for stmt in members[gid]]
        for child in children[gid]:
            lines.append(f"{pad}subgraph cluster_{ident[child]} {{")
            lines.append(pad + "  " + defaults_stmt("graph", {
                "id": id_prefix + child, "label": labels[child], "style": "rounded", "color": "#868e96"}))
            lines += emit(child, depth + 1)
            lines.append(pad + "}")
        return lines

    edges = []
    for k, ((src, dst, kind), texts) in enumerate(_edges(graph, collapsed, parent).items()):
        label = texts[0] if len(texts) == 1 else f"{len(texts)} edges"
        edges.append("  " + edge_stmt(ident[src], ident[dst], {
            "id": f"{id_prefix}e{k}", "label": label if kind != "ctrl" else None, **EDGE_STYLE.get(kind, {})}))
    head = [defaults_stmt("graph", {"id": id_prefix + "graph", "label": payload.get("title", ""), "labelloc": "t",
                                    "fontname": FONT, "fontsize": "11", "rankdir": "TB", "mclimit": "0.3"}),
            defaults_stmt("node", {"shape": "box", "style": "rounded,filled", "fontname": FONT, "fontsize": "10"}),
            defaults_stmt("edge", {"fontname": FONT, "fontsize": "9"})]
    return "\n".join(["digraph flowlab {", *("  " + h for h in head), *emit(None, 1), *edges, "}"]) + "\n"


def new_id_prefix() -> str:
    """A prefix for one output's SVG/DOM ids: two outputs, even from different kernel sessions, never share ids."""
    import uuid

    return f"fl{uuid.uuid4().hex[:10]}-"


def payload_svg(payload: dict[str, Any], *, id_prefix: str = "", budget: int = SVG_BUDGET,
                timeout: float = 20.0) -> str:
    """The bounded picture as SVG text (see :func:`payload_dot`)."""
    from .render import render_svg

    return render_svg(payload_dot(payload, id_prefix=id_prefix, budget=budget), timeout=timeout)
