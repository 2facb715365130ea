"""A Plan as DOT, after OneFlow's ``PlanUtil::ToDotFile`` (``dot/merged_plan.dot``).

Tasks are clustered by job and, inside a job, by (machine, thread); each node is labelled with the task name and
its task type, filled with the job's colour (``set312`` scheme, ``job_id % 12 + 1``, as OneFlow does) and has
the tooltip ``<task_type>  <task_id>-<machine>:<thread>:<parallel_id>``. One edge per (regst, consumer):
``regst:<regst_desc_id>:<register_num>``, solid for data regsts and dashed for ctrl regsts. As in OneFlow, the
Esac -> ReentrantLock edge that closes the main job's loop is drawn reversed so the layout stays top-down.
SVG ids: ``task/<task_id>``, ``job/<job name>``, ``regst/<regst_desc_id>/<consumer task_id>``.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from flowlab.ir import Plan, RegstDesc, TaskProto
from flowlab.ir.plan import short_task_id

from .dotsyntax import check_choice, defaults_stmt, edge_stmt, indent, node_stmt, svg_id

RANKDIRS = ("TB", "LR", "BT", "RL")
FONT = "Helvetica"
DATA_COLOR = "gray15"
CTRL_COLOR = "gray65"
_NOT_CLASS = re.compile(r"[^A-Za-z0-9_-]")


def task_node_id(task_id: int) -> str:
    return f"task{task_id}" if task_id >= 0 else f"task_m{-task_id}"


def job_color(job_id: int) -> str:
    return str(job_id % 12 + 1)


def task_tooltip(task: TaskProto) -> str:
    head = f"{task.task_type}  {task.task_id}-{task.machine_id}:{task.thrd_id}:{task.parallel_id}"
    lines = [head, task.name, f"task {short_task_id(task.task_id)}, job {task.job_id}"]
    lines.append(f"chain {task.chain_id}, order {task.order_in_graph}")
    if task.exec_sequence:
        lines.append("ops: " + ", ".join(f"{op.name} ({op.op_type})" for op in task.exec_sequence))
    return "\n".join(lines)


def regst_tooltip(regst: RegstDesc, src: TaskProto, produced: str, dst_name: str, consumed: str) -> str:
    lines = [f"{src.name}.{produced} -> {dst_name}.{consumed}"]
    lines.append(f"regst {regst.regst_desc_id}: {regst.regst_desc_type}, register_num {regst.register_num}")
    lines.extend(f"{lbn}: {desc}" for lbn, desc in regst.lbi2blob_desc.items())
    if regst.mem_block_id >= 0:
        lines.append(f"mem block {regst.mem_block_id} + {regst.mem_block_offset}")
    if regst.inplace_consumed_regst_desc_id >= 0:  # a variable's ref: that register's bytes, no copy
        lines.append(f"in place of regst {regst.inplace_consumed_regst_desc_id}")
    if regst.piece_inplace_consumed_regst_desc_id >= 0:  # a gathered weight: its own rows are the variable's
        lines.append(f"holds regst {regst.piece_inplace_consumed_regst_desc_id} in place at byte "
                     f"{regst.piece_inplace_offset} (shared memory)")
    return "\n".join(lines)


def _nodes_in_job(tasks: list[TaskProto], id_prefix: str, collapsed_chains: Collection[int],
                  node_of: dict[int, str]) -> list[str]:
    """Task nodes, with each collapsed chain (of two or more tasks) drawn once as one node."""
    out, drawn = [], set()
    for task in tasks:
        members = [t for t in tasks if t.chain_id == task.chain_id]
        if task.chain_id not in collapsed_chains or len(members) < 2:
            out.append(_task_node(task, id_prefix))
            continue
        node = f"collapsed_chain{task.chain_id}"
        node_of[task.task_id] = node
        if node not in drawn:
            drawn.add(node)
            out.append(node_stmt(node, {
                "id": id_prefix + svg_id("chain", task.chain_id), "class": "chain collapsed",
                "label": f"chain {task.chain_id}: {members[0].name} .. {members[-1].name}\n{len(members)} tasks",
                "tooltip": f"chain {task.chain_id}", "style": "rounded,filled,bold",
            }))
    return out


def _task_node(task: TaskProto, id_prefix: str) -> str:
    attrs = {
        "id": id_prefix + svg_id("task", task.task_id),
        "class": f"task {_NOT_CLASS.sub('_', task.task_type)}",
        "label": f"{task.name}\n{task.task_type}",
        "tooltip": task_tooltip(task),
        "fillcolor": job_color(task.job_id),
    }
    return node_stmt(task_node_id(task.task_id), attrs)


def plan_to_dot(
    plan: Plan,
    *,
    rankdir: str = "TB",
    id_prefix: str = "",
    thread_clusters: bool = True,
    edge_labels: bool = True,
    collapsed_jobs: Collection[str] = (),
    collapsed_chains: Collection[int] = (),
) -> str:
    """DOT text for ``plan``. ``thread_clusters=False`` drops the (machine, thread) clusters inside each job;
    ``edge_labels=False`` drops the ``regst:<id>:<register_num>`` labels (both make large plans lay out faster).
    Each job named in ``collapsed_jobs`` is one node (id ``job/<name>``), and each chain id in
    ``collapsed_chains`` one node (id ``chain/<id>``); their tasks' edges meet that node."""
    check_choice("rankdir", rankdir, RANKDIRS)
    lines = ["digraph merged_plan {"]
    lines += indent(
        [
            defaults_stmt("graph", {"rankdir": rankdir, "fontname": FONT, "fontsize": "11"}),
            defaults_stmt(
                "node",
                {"shape": "box", "style": "rounded,filled", "colorscheme": "set312", "fontname": FONT,
                 "fontsize": "10"},
            ),
            defaults_stmt("edge", {"fontname": FONT, "fontsize": "9"}),
        ]
    )
    by_job: dict[int, list[TaskProto]] = {}
    for task in plan.tasks:
        by_job.setdefault(task.job_id, []).append(task)
    node_of: dict[int, str] = {}  # task id -> the DOT node standing for it (its job's, when collapsed)
    for job_id in sorted(by_job):
        name = plan.job_names[job_id] if 0 <= job_id < len(plan.job_names) else f"job{job_id}"
        kind = plan.job_kinds[job_id] if 0 <= job_id < len(plan.job_kinds) else "?"
        if name in collapsed_jobs:
            node = f"collapsed_job{job_id}" if job_id >= 0 else f"collapsed_job_m{-job_id}"
            node_of.update((t.task_id, node) for t in by_job[job_id])
            lines.append("  " + node_stmt(node, {
                "id": id_prefix + svg_id("job", name), "class": "job collapsed",
                "label": f"job {job_id} {name} ({kind})\n{len(by_job[job_id])} tasks: click to expand",
                "tooltip": name, "fillcolor": job_color(job_id), "penwidth": "2", "style": "rounded,filled,bold",
            }))
            continue
        cluster = {
            "id": id_prefix + svg_id("job", name),
            "class": "job",
            "label": f"job {job_id} {name} ({kind})",
            "tooltip": name,
            "style": "rounded",
            "colorscheme": "set312",
            "color": job_color(job_id),
            "penwidth": "2",
        }
        cluster_id = f"cluster_job{job_id}" if job_id >= 0 else f"cluster_job_m{-job_id}"
        lines.append(f"  subgraph {cluster_id} {{")
        lines += indent([defaults_stmt("graph", cluster)], 2)
        if not thread_clusters:
            lines += indent(_nodes_in_job(by_job[job_id], id_prefix, collapsed_chains, node_of), 2)
        else:
            by_thread: dict[tuple[int, int], list[TaskProto]] = {}
            for task in by_job[job_id]:
                by_thread.setdefault((task.machine_id, task.thrd_id), []).append(task)
            for (machine_id, thrd_id), tasks in by_thread.items():
                thread_cluster = {
                    "id": id_prefix + svg_id("thrd", name, machine_id, thrd_id),
                    "class": "thrd",
                    "label": f"machine {machine_id} thrd {thrd_id}",
                    "style": "dashed",
                    "colorscheme": "x11",
                    "color": "gray60",
                    "penwidth": "1",
                    "fontsize": "9",
                }
                lines.append(f"    subgraph {cluster_id}_m{machine_id}_t{thrd_id} {{")
                lines += indent([defaults_stmt("graph", thread_cluster)], 3)
                lines += indent(_nodes_in_job(tasks, id_prefix, collapsed_chains, node_of), 3)
                lines.append("    }")
        lines.append("  }")
    lines += indent(_regst_edges(plan, id_prefix, edge_labels, node_of))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _regst_edges(plan: Plan, id_prefix: str, edge_labels: bool, node_of: dict[int, str] | None = None) -> list[str]:
    tasks = {t.task_id: t for t in plan.tasks}
    node_of = node_of or {}
    drawn_pairs: set[tuple[str, str]] = set()  # between collapsed jobs, one edge per pair of nodes
    consumed_as: dict[int, dict[int, str]] = {}  # consumer task id -> regst id -> consumed name
    for task in plan.tasks:
        names = consumed_as.setdefault(task.task_id, {})
        for consumed_name, ids in task.consumed_regst_desc_id.items():
            for regst_id in ids:
                names.setdefault(regst_id, consumed_name)
    edges: list[str] = []
    missing: list[int] = []
    seen: set[str] = set()
    for task in plan.tasks:
        for produced_name, regst in task.produced_regst_desc.items():
            for consumer_id in regst.consumer_task_ids:
                dst = tasks.get(consumer_id)
                if dst is None and consumer_id not in missing:
                    missing.append(consumer_id)
                dst_name = dst.name if dst is not None else f"task {consumer_id}"
                consumed = consumed_as.get(consumer_id, {}).get(regst.regst_desc_id, "?")
                edge_id = id_prefix + svg_id("regst", regst.regst_desc_id, consumer_id)
                n = 2
                while edge_id in seen:
                    edge_id, n = id_prefix + svg_id("regst", regst.regst_desc_id, consumer_id, n), n + 1
                seen.add(edge_id)
                color = CTRL_COLOR if regst.is_ctrl else DATA_COLOR
                attrs = {
                    "id": edge_id,
                    "class": "regst ctrl" if regst.is_ctrl else "regst data",
                    "xlabel": f"regst:{regst.regst_desc_id}:{regst.register_num}" if edge_labels else None,
                    "tooltip": regst_tooltip(regst, task, produced_name, dst_name, consumed),
                    "style": "dashed" if regst.is_ctrl else "solid",
                    "color": color,
                    "fontcolor": color,
                }
                src = node_of.get(task.task_id, task_node_id(task.task_id))
                dst_node = node_of.get(consumer_id, task_node_id(consumer_id))
                if task.task_id in node_of or consumer_id in node_of:
                    if src == dst_node or (src, dst_node) in drawn_pairs:
                        continue  # inside one collapsed job, or already drawn between these nodes
                    drawn_pairs.add((src, dst_node))
                if dst is not None and task.task_type == "Esac" and dst.task_type == "ReentrantLock":
                    attrs["dir"] = "back"  # OneFlow's IsEsac2ReentrantLockEdge: keep the loop's back edge upward
                    edges.append(edge_stmt(dst_node, src, attrs))
                else:
                    edges.append(edge_stmt(src, dst_node, attrs))
    for task_id in missing:
        attrs = {
            "id": id_prefix + svg_id("task", task_id),
            "class": "task missing",
            "label": f"task {short_task_id(task_id) if task_id >= 0 else task_id}\n(not in plan)",
            "style": "dotted",
        }
        edges.append(node_stmt(task_node_id(task_id), attrs))
    return edges
