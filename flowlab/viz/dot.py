"""``to_dot``: a Job, a JobSet or a Plan as Graphviz DOT text (pure functions of the IR).

Job graphs: one node per op (label ``name`` / ``op_type``; user ops and ops added by a pass or the system in
different fills), one solid edge per consumed blob labelled with its blob desc (``f32[2,1,5,5]``), dashed edges
for ``ctrl_in_op_names``. A JobSet draws one cluster per job and, dotted, the interface ops that jobs share.
Plan graphs are in :mod:`flowlab.viz.plan_dot`.

Every node and cluster carries an SVG ``id`` (``op/<job>/<op>``, ``job/<job>``, percent-encoded, see
:func:`~flowlab.viz.dotsyntax.svg_id`), a ``class`` and a ``tooltip`` with the full name, so a browser view can
find them in the rendered SVG.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any

from flowlab.ir import Job, JobSet, OpConf, Plan
from flowlab.ir.op_conf import format_attr

from .dotsyntax import (
    IdAllocator,
    check_choice,
    defaults_stmt,
    edge_stmt,
    indent,
    node_stmt,
    svg_id,
)

RANKDIRS = ("TB", "LR", "BT", "RL")
FONT = "Helvetica"
USER_FILL = "#cfe2ff"  # ops the user's function created
SYSTEM_FILL = "#e9ecef"  # ops a pass or the system added (created_by != "user")
EXTERNAL_COLOR = "#adb5bd"
CTRL_COLOR = "#6c757d"
SHARED_COLOR = "#d63384"


def to_dot(obj: Job | JobSet | Plan, **options: Any) -> str:
    """DOT text for a :class:`Job`, :class:`JobSet` or :class:`Plan`.

    Options (keyword only): Job — ``rankdir`` (``"TB"``), ``id_prefix`` (``""``, prepended to every SVG id, for
    several graphs on one page), ``title`` (a graph label; ``None``: the job's header line). JobSet — ``rankdir``,
    ``id_prefix``, ``show_shared`` (``True``: dotted links between the interface ops jobs share). Plan — see
    :func:`flowlab.viz.plan_dot.plan_to_dot`.
    """
    if isinstance(obj, Job):
        return _call(job_to_dot, obj, options)
    if isinstance(obj, JobSet):
        return _call(job_set_to_dot, obj, options)
    if isinstance(obj, Plan):
        from .plan_dot import plan_to_dot

        return _call(plan_to_dot, obj, options)
    raise TypeError(f"to_dot takes a flowlab Job, JobSet or Plan; got {type(obj).__name__}: {obj!r:.80}")


def _call(func: Any, obj: Any, options: dict[str, Any]) -> str:
    accepted = [p.name for p in inspect.signature(func).parameters.values() if p.kind is p.KEYWORD_ONLY]
    for name in options:
        if name not in accepted:
            close = difflib.get_close_matches(name, accepted, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(
                f"to_dot got an unknown option {name!r} for a {type(obj).__name__}{hint} (accepted: {accepted})"
            )
    return func(obj, **options)


# -- Job --------------------------------------------------------------------------------------------------
def job_header(job: Job) -> str:
    job_type = job.job_conf.get("job_type")
    return f"job {job.name} ({job.kind}" + (f", {job_type}" if job_type else "") + ")"


def op_tooltip(op: OpConf) -> str:
    lines = [op.name, f"type: {op.op_type}", f"created by: {op.created_by}", f"placement: {op.parallel_conf}"]
    if op.attrs:
        text = ", ".join(f"{k}={format_attr(v)}" for k, v in op.attrs.items())
        lines.append("attrs: " + (text if len(text) <= 200 else text[:199] + "…"))
    if op.loc:
        lines.append(f"at: {op.loc}")
    return "\n".join(lines)


def _job_body(job: Job, node_id: IdAllocator, id_prefix: str) -> list[str]:
    """Node and edge statements of one job (used for a Job graph and for each JobSet cluster)."""
    lines: list[str] = []
    producer: dict[str, OpConf] = {}
    for op in job.ops:
        for lbn in op.output_lbns:
            producer[lbn] = op
    names = {op.name for op in job.ops}
    for op in job.ops:
        is_user = op.created_by == "user"
        attrs = {
            "id": id_prefix + svg_id("op", job.name, op.name),
            "class": "op user" if is_user else "op system",
            "label": f"{op.name}\n{op.op_type}",
            "tooltip": op_tooltip(op),
            "fillcolor": USER_FILL if is_user else SYSTEM_FILL,
        }
        lines.append(node_stmt(node_id(op.name), attrs))
    external: list[str] = []  # producers referenced but not in the job: drawn dotted, not dropped

    def source_of(op_name: str) -> str:
        if op_name not in names and op_name not in external:
            external.append(op_name)
        return node_id(op_name)

    edges: list[str] = []
    edge_count: dict[str, int] = {}
    for op in job.ops:
        for arg, lbns in op.inputs.items():
            for i, lbn in enumerate(lbns):
                src_op = producer.get(lbn)
                src = node_id(src_op.name) if src_op else source_of(lbn.rpartition("/")[0] or lbn)
                desc = job.blob_descs.get(lbn)
                key = f"{lbn}->{op.name}"
                edge_count[key] = edge_count.get(key, 0) + 1
                suffix = (str(edge_count[key]),) if edge_count[key] > 1 else ()
                edges.append(
                    edge_stmt(
                        src,
                        node_id(op.name),
                        {
                            "id": id_prefix + svg_id("blob", job.name, lbn, op.name, *suffix),
                            "class": "data",
                            "label": str(desc) if desc is not None else "?",
                            "tooltip": f"{lbn} -> {op.name}.{arg}_{i}" + (f"\n{desc}" if desc is not None else ""),
                        },
                    )
                )
        for ctrl_name in op.ctrl_in_op_names:
            edges.append(
                edge_stmt(
                    source_of(ctrl_name),
                    node_id(op.name),
                    {
                        "id": id_prefix + svg_id("ctrl", job.name, ctrl_name, op.name),
                        "class": "ctrl",
                        "style": "dashed",
                        "color": CTRL_COLOR,
                        "tooltip": f"ctrl: {ctrl_name} -> {op.name}",
                    },
                )
            )
    for name in external:
        attrs = {
            "id": id_prefix + svg_id("external", job.name, name),
            "class": "op external",
            "label": name,
            "tooltip": f"{name} (not an op of job {job.name})",
            "style": "dotted",
            "color": EXTERNAL_COLOR,
        }
        lines.append(node_stmt(node_id(name), attrs))
    return lines + edges


def _graph_defaults(rankdir: str, extra: dict[str, str] | None = None) -> list[str]:
    return [
        defaults_stmt("graph", {**(extra or {}), "rankdir": rankdir, "fontname": FONT, "fontsize": "11"}),
        defaults_stmt("node", {"shape": "box", "style": "rounded,filled", "fontname": FONT, "fontsize": "10"}),
        defaults_stmt("edge", {"fontname": FONT, "fontsize": "9"}),
    ]


def job_to_dot(job: Job, *, rankdir: str = "TB", id_prefix: str = "", title: str | None = None) -> str:
    check_choice("rankdir", rankdir, RANKDIRS)
    graph_attrs = {
        "id": id_prefix + svg_id("job", job.name),
        "label": job_header(job) if title is None else title,
        "labelloc": "t",
    }
    lines = ["digraph job {", *indent(_graph_defaults(rankdir, graph_attrs))]
    lines += indent(_job_body(job, IdAllocator("op_"), id_prefix))
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- JobSet -----------------------------------------------------------------------------------------------
def job_set_to_dot(job_set: JobSet, *, rankdir: str = "TB", id_prefix: str = "", show_shared: bool = True) -> str:
    check_choice("rankdir", rankdir, RANKDIRS)
    lines = ["digraph job_set {"]
    lines += indent(_graph_defaults(rankdir))
    allocators = []
    for job_id, job in enumerate(job_set.jobs):
        node_id = IdAllocator(f"j{job_id}_op_")
        allocators.append(node_id)
        cluster_attrs = {
            "id": id_prefix + svg_id("job", job.name),
            "class": f"job {job.kind}",
            "label": f"[{job_id}] {job_header(job)}",
            "tooltip": job.name,
            "style": "rounded",
            "color": "#495057",
        }
        lines.append(f"  subgraph cluster_job{job_id} {{")
        lines += indent([defaults_stmt("graph", cluster_attrs)], 2)
        lines += indent(_job_body(job, node_id, id_prefix), 2)
        lines.append("  }")
    if show_shared:
        for name, holders in job_set.shared_interfaces.items():
            ids = [job_set.job_id(h) for h in holders]
            for a, b in zip(ids, ids[1:]):
                attrs = {
                    "id": id_prefix + svg_id("shared", name, job_set.jobs[a].name, job_set.jobs[b].name),
                    "class": "shared",
                    "style": "dotted",
                    "dir": "none",
                    "constraint": "false",
                    "color": SHARED_COLOR,
                    "tooltip": f"shared interface blob {name}: {job_set.jobs[a].name} / {job_set.jobs[b].name}",
                }
                lines.append("  " + edge_stmt(allocators[a](name), allocators[b](name), attrs))
    lines.append("}")
    return "\n".join(lines) + "\n"
