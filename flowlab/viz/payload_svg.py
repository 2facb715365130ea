"""A bounded static picture of a view payload: the DOT (and SVG) of its initial state, groups drawn as clusters
when open and as one box (with its node count) when collapsed, edges into a collapsed group aggregated.

This is the ``image/svg+xml`` fallback of every flowlab output (nbconvert, GitHub, front ends without the
flowlab renderer). Graphviz takes minutes on a 1,500-node Plan, so the picture never holds more than
``SVG_BUDGET`` boxes: when the payload's initial state shows more, the deepest open groups are closed first.
Every SVG id starts with ``id_prefix``; give each output its own, so two pictures in one page never share ids.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from .dotsyntax import defaults_stmt, edge_stmt, node_stmt
from .payload_graph import choose_collapsed
from .payload_overlay import overlay_fills
from .payload_sections import stuck_fills

SVG_BUDGET = 60  # boxes: a static picture is the overview; the interactive view opens the rest
SVG_EDGE_BUDGET = 100  # Graphviz's time grows fast with edges between clusters (260 of them took 9 s)
MAX_WIDTH_PT = 720.0  # 960 px: about a JupyterLab output area; a wider picture is scaled down, its text with it
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


def payload_dot(payload: dict[str, Any], *, id_prefix: str = "", budget: int = SVG_BUDGET,
                columns: int | None = None, clusters: bool = True, newrank: bool = False) -> str:
    """DOT for the payload's graph in its bounded initial state (see the module docstring). ``columns``: at most
    that many top-level boxes (jobs) side by side, the rest in further rows, so a wide picture wraps.
    ``clusters=False``: open groups are not drawn as boxes (the simpler layout :func:`payload_svg` falls back to).
    ``newrank=True``: Graphviz ranks the whole graph at once; its older per-cluster ranking (graphviz-pure's too)
    fails with "trouble in init_rank" on non-constraint edges out of a cluster, which every row-wrapped
    multi-device Plan has, but is several times faster where it works (0.07 s against 0.6 s on the 30-layer Plan)."""
    graph = payload["graph"]
    collapsed = bounded_state(graph, budget)
    parent = {g["id"]: g["parent"] for g in graph["groups"]}
    ident: dict[str, str] = {}
    members: dict[str | None, list[str]] = defaultdict(list)  # open group (or None) -> its DOT statements
    children: dict[str | None, list[str]] = defaultdict(list)  # open group -> its open child groups
    counts: dict[str, int] = defaultdict(int)
    # an overlay's colours (payload_overlay.py) and a hang's (payload_sections.py), as the live view fills the boxes
    fills = {**overlay_fills(payload), **stuck_fills(payload)}
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
                "shape": "box3d", "style": "filled", "fillcolor": fills.get(gid, "#f1f3f5"),
                "tooltip": group["label"]}))
        else:
            children[group["parent"]].append(gid)
    for node in graph["nodes"]:
        if _shown_as(node["parent"], node["id"], collapsed, parent) != node["id"]:
            continue
        ident[node["id"]] = f"n{len(ident)}"
        label = node["label"] + (f"\n{node['type']}" if node.get("type") else "")
        members[node["parent"]].append(node_stmt(ident[node["id"]], {
            "id": id_prefix + node["id"], "label": label, "class": " ".join([node["kind"], *node["classes"]]),
            "fillcolor": fills.get(node["id"], NODE_FILL.get(node["kind"], "#ffffff")), "tooltip": node["label"]}))
    labels = {g["id"]: g["label"] for g in graph["groups"]}

    def emit(gid: str | None, depth: int) -> list[str]:
        pad = "  " * depth
        lines = [pad + stmt for stmt in members[gid]]
        for child in children[gid]:
            if not clusters:
                lines += emit(child, depth)
                continue
            lines.append(f"{pad}subgraph cluster_{ident[child]} {{")
            lines.append(pad + "  " + defaults_stmt("graph", {
                "id": id_prefix + child, "label": labels[child], "style": "rounded", "color": "#868e96"}))
            lines += emit(child, depth + 1)
            lines.append(pad + "}")
        return lines

    node_parent = {n["id"]: n["parent"] for n in graph["nodes"]}

    def top(item: str) -> str:  # the top-level group (a job) holding a drawn box
        gid = node_parent.get(item, parent.get(item))
        while gid is not None:
            item, gid = gid, parent[gid]
        return item

    edges = _row_edges(members, children, columns) if columns else []
    for k, ((src, dst, kind), texts) in enumerate(_edges(graph, collapsed, parent).items()):
        label = texts[0] if len(texts) == 1 else f"{len(texts)} edges"
        style = dict(EDGE_STYLE.get(kind, {}))
        if columns and top(src) != top(dst):
            style["constraint"] = "false"  # wrapped into rows: jobs are placed by rows, not by edges between them
        edges.append("  " + edge_stmt(ident[src], ident[dst], {
            "id": f"{id_prefix}e{k}", "label": label if kind != "ctrl" else None, **style}))
    title = "\n".join([payload.get("title", ""), *lane_summary(graph)])
    head = [defaults_stmt("graph", {"id": id_prefix + "graph", "label": title, "labelloc": "t",
                                    "fontname": FONT, "fontsize": "11", "rankdir": "TB", "mclimit": "0.3",
                                    "newrank": "true" if newrank else None}),
            defaults_stmt("node", {"shape": "box", "style": "rounded,filled", "fontname": FONT, "fontsize": "10"}),
            defaults_stmt("edge", {"fontname": FONT, "fontsize": "10"})]
    return "\n".join(["digraph flowlab {", *("  " + h for h in head), *emit(None, 1), *edges, "}"]) + "\n"


def lane_summary(graph: dict[str, Any], width: int = 110, listed: int = 6) -> list[str]:
    """Title lines for the device/thread lanes (the picture has none of its own: a collapsed group's tasks run on
    several): each lane with its number of tasks, or past ``listed`` lanes, per machine how many lanes and tasks,
    the range per lane and the busiest lane."""
    lanes = graph.get("lanes") or []
    if len(lanes) < 2:
        return []
    count: dict[str, int] = defaultdict(int)
    for node in graph["nodes"]:
        if "lane" in node:
            count[node["lane"]] += 1
    if len(lanes) <= listed:
        parts = [f"{lane}: {count[lane]:,} tasks" for lane in lanes]
    else:
        machines: dict[str, list[int]] = defaultdict(list)
        for lane in lanes:
            # lane_names writes "machine m / ..." only where there are several machines
            machines[lane.split(" / ")[0] if " / " in lane else "machine 0"].append(count[lane])
        parts = [f"{m}: {len(c)} lanes, {sum(c):,} tasks ({min(c):,}-{max(c):,} per lane)" for m, c in machines.items()]
        busiest = max(lanes, key=lambda lane: count[lane])
        parts.append(f"busiest {busiest}: {count[busiest]:,} tasks")
    lines, line = [], f"{len(lanes)} lanes: "
    for k, part in enumerate(parts):
        piece = part + (", " if k < len(parts) - 1 else "")
        if len(line) + len(piece) > width and line.strip():
            lines.append(line.rstrip())
            line = ""
        line += piece
    return [*lines, line]


def _row_edges(members: dict[str | None, list[str]], children: dict[str | None, list[str]], columns: int
               ) -> list[str]:
    """Invisible edges that put top-level item ``i + columns`` below item ``i``: from the item's last box to the
    next row's item's first box, so the picture wraps into rows. The drawn edges between top-level items rank
    nothing then (see payload_dot), so these make no cycle. (Under ``newrank`` a cluster is ranked by its boxes,
    so two rows may still overlap in rank; :func:`payload_svg` keeps the narrowest picture it drew.)"""
    node_ident = re.compile(r"^\s*(n\d+) \[")

    def boxes(gid: str) -> list[str]:  # the DOT names of the boxes inside an open group, in emission order
        own = [m.group(1) for stmt in members[gid] if (m := node_ident.match(stmt))]
        return own + [b for child in children[gid] for b in boxes(child)]

    items = [[m.group(1)] for stmt in members[None] if (m := node_ident.match(stmt))]
    items += [b for child in children[None] if (b := boxes(child))]
    return ["  " + edge_stmt(items[i][-1], items[i + columns][0], {"style": "invis"})
            for i in range(len(items) - columns)]


def new_id_prefix() -> str:
    """A prefix for one output's SVG/DOM ids: two outputs, even from different kernel sessions, never share ids."""
    import uuid

    return f"fl{uuid.uuid4().hex[:10]}-"


def payload_svg(payload: dict[str, Any], *, id_prefix: str = "", budget: int = SVG_BUDGET,
                timeout: float = 20.0, strict: bool = False) -> str:
    """The bounded picture as SVG text (see :func:`payload_dot`), wrapped into rows of top-level boxes while it is
    wider than ``MAX_WIDTH_PT``: a notebook scales a wider picture down to its output area, and its text with it.

    The picture is every output's fallback, so it never costs the output: when a wrapped re-render fails the
    wider one stays; when the clustered layout fails, the groups are left out (:func:`payload_dot`'s
    ``clusters=False``); when that fails or the renderer timed out, the SVG is a note that says why
    (:func:`placeholder_svg`). ``strict=True`` raises the first :class:`RenderError` instead."""
    from .render import RenderError, render_svg

    def render(**options: Any) -> str:
        dot = payload_dot(payload, id_prefix=id_prefix, budget=budget, **options)
        try:
            return render_svg(dot, timeout=timeout)
        except RenderError as err:  # the fast ranking failed (see payload_dot's newrank): rank the whole graph
            if any("timed out" in what for _, what in err.attempts):
                raise
            return render_svg(payload_dot(payload, id_prefix=id_prefix, budget=budget, newrank=True, **options),
                              timeout=timeout)

    try:
        svg = render()
    except RenderError as err:
        if strict:
            raise
        if any("timed out" in what for _, what in err.attempts):
            return placeholder_svg(payload, err, id_prefix=id_prefix)
        try:
            return render(clusters=False)
        except RenderError:
            return placeholder_svg(payload, err, id_prefix=id_prefix)
    columns, width = len(top_level_items(payload, budget)), svg_width(svg)
    best = (width, svg)
    for _ in range(3):  # each try is one more Graphviz run; three find a fit for most payloads
        if width <= MAX_WIDTH_PT or columns <= 1:
            break
        columns = max(1, min(columns - 1, int(columns * MAX_WIDTH_PT / width)))
        try:
            svg = render(columns=columns)
        except RenderError:
            if strict:
                raise
            break  # the pictures drawn so far are wide, not wrong
        width = svg_width(svg)
        # long edges between rows can make a wrapped picture wider than the unwrapped one: keep the narrowest
        best = min(best, (width, svg), key=lambda pair: pair[0])
    return best[1]


def placeholder_svg(payload: dict[str, Any], error: BaseException, *, id_prefix: str = "") -> str:
    """A small SVG that stands where the picture could not be drawn: the payload's title, why (the error's first
    line and each renderer's failure, shortened) and where the graph is still shown."""
    from html import escape

    from .dotsyntax import clean_text

    why = [line.strip() for line in str(error).splitlines() if line.strip()][:4]
    lines = [f"No static picture of {payload.get('title') or payload.get('kind', 'this view')}:",
             *(w if len(w) <= 110 else w[:107] + "..." for w in why),
             "The interactive view (JupyterLab with flowlab's extension) still draws the whole graph."]
    height = 20 + 16 * len(lines)
    text = "".join(f'<text x="8" y="{22 + 16 * k}">{escape(clean_text(line))}</text>' for k, line in enumerate(lines))
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<svg width="{MAX_WIDTH_PT:g}pt" height="{height}pt" '
            f'viewBox="0 0 {MAX_WIDTH_PT:g} {height}" xmlns="http://www.w3.org/2000/svg">'
            f'<g id="{escape(id_prefix)}graph" class="graph placeholder" font-family="{FONT}" font-size="11">'
            f'<title>no picture</title>{text}</g></svg>\n')


def svg_width(svg: str) -> float:
    """The natural width of a Graphviz SVG, in points."""
    match = re.search(r'<svg width="([\d.]+)pt"', svg)
    return float(match.group(1)) if match else 0.0


def top_level_items(payload: dict[str, Any], budget: int = SVG_BUDGET) -> list[str]:
    """The ids of the groups and nodes drawn at the top level of the bounded picture."""
    graph = payload["graph"]
    return [g["id"] for g in graph["groups"] if g["parent"] is None] + \
        [n["id"] for n in graph["nodes"] if n["parent"] is None]
