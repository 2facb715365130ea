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
