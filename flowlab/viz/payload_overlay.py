"""A payload's optional ``overlay`` section: one number per node (flowlab/debug/overlay.py's ``Overlay``) with what
the front end needs to colour the boxes and fill the panes without recomputing anything:

``{"metric", "unit", "view", "scale": "gradient" | "thresholds" | "categories", "values": {node id: number},
"colors": [...], "thresholds"?: [...], "categories"?: [...], "min", "max", "groups": {group id: {"count", "min",
"median", "max", "sum"}}}``

A group's statistics are over every node under it at any depth, so a collapsed layer shows its own numbers.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any


def overlay_section(overlay: Mapping[str, Any], graph: Mapping[str, Any]) -> dict[str, Any]:
    """``overlay`` (an ``Overlay.to_dict()``) checked against ``graph`` (a payload's) and given its statistics."""
    nodes = {n["id"]: n for n in graph["nodes"]}
    values = overlay["values"]
    unknown = [k for k in values if k not in nodes]
    if unknown:
        sample = ", ".join(list(nodes)[:3])
        raise KeyError(f"overlay {overlay['metric']!r} ({overlay['view']} view) names {len(unknown)} nodes this view "
                       f"does not have, e.g. {unknown[0]!r} (its node ids look like {sample}): an overlay is drawn "
                       "on the view it was built for")
    parent = {g["id"]: g["parent"] for g in graph["groups"]}
    under: dict[str, list[float]] = {}
    for node_id, value in values.items():
        group = nodes[node_id]["parent"]
        while group is not None:
            under.setdefault(group, []).append(value)
            group = parent.get(group)
    groups = {gid: {"count": len(vals), "min": min(vals), "median": statistics.median(vals), "max": max(vals),
                    "sum": math.fsum(vals)} for gid, vals in under.items()}
    out = dict(overlay)
    if values:
        out["min"], out["max"] = min(values.values()), max(values.values())
    out["groups"] = groups
    return out


def fill_of(section: Mapping[str, Any], value: float) -> str:
    """A value's fill, as extension/src/overlay.ts's ``colorOf`` computes it: its category's or threshold bin's
    colour (the bin: how many edges are at or below it), or on a gradient the colour at its place from min to max."""
    colors = section["colors"]
    if section["scale"] == "categories":
        return colors[round(value)]
    if section["scale"] == "thresholds":
        return colors[min(sum(1 for t in section["thresholds"] if value >= t), len(colors) - 1)]
    lo, hi = section.get("min", value), section.get("max", value)
    t = min(1.0, max(0.0, (value - lo) / (hi - lo))) if hi > lo else 0.0
    at = t * (len(colors) - 1)
    i = min(int(at), len(colors) - 2)
    if i < 0:
        return colors[0]
    a, b = (_rgb(colors[i]), _rgb(colors[i + 1]))
    return "#" + "".join(f"{round(x + (y - x) * (at - i)):02x}" for x, y in zip(a, b, strict=True))


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def overlay_fills(payload: Mapping[str, Any]) -> dict[str, str]:
    """Node id -> fill for a payload's overlay (none: {}); a group by its greatest value, as the live view draws a
    collapsed one (categories colour no group)."""
    section = payload.get("overlay")
    if not section:
        return {}
    fills = {node: fill_of(section, v) for node, v in section["values"].items()}
    if section["scale"] != "categories":
        fills.update({gid: fill_of(section, st["max"]) for gid, st in section["groups"].items()})
    return fills
