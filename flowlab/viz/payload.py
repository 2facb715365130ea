"""View payloads, version 1: the JSON the front end (``extension/``) draws, in a live widget or from a saved
notebook's ``application/vnd.flowlab.{jobset,plan,run}+json`` output. The contract is ``briefs/payload.md``:

- ``jobset_payload(job_set, passes)``: every job's ops, grouped job -> scope -> op; edges labelled with shape and
  dtype; the same-named interface blobs that jobs share drawn as ``shared_mem`` edges through a ``memblock`` node;
- ``plan_payload(plan, job_set)``: tasks grouped the same way, lanes by (machine, thread), one edge per (register,
  consumer), the shared memory blocks as ``memblock`` nodes; ``marks`` (id -> added/removed/changed) become node
  classes for the Plan diff;
- ``run_payload(plan, job_set, recording)``: the plan plus a recorded run's acts (each with the kernel ``tier`` that
  ran it, where the recording says) and memory.

A notebook stores these as version 2 (``payload_pack.py``: the same payload gzipped, its head readable); the views
read both versions.

Strings are data: nothing here escapes or formats HTML, and ids never contain user text (an op may be named
``<img src=x onerror=alert(1)>``; its id is ``o:0:3``). Groups start collapsed where needed so that no view opens
with more than ``VISIBLE_BUDGET`` boxes.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from flowlab.ir import INTERFACE_OP_TYPES, Job, JobSet, Plan

from .payload_details import PlanIndex, blob_label, created_by_pass, loc_mapper, op_sections, sbp_sections, section
from .payload_devices import JobBlobs, boxing_causes, boxing_note, edge_sbp, lane_names, task_devices
from .payload_graph import GraphBuilder

PAYLOAD_VERSION = 1
MIME = {"jobset": "application/vnd.flowlab.jobset+json", "plan": "application/vnd.flowlab.plan+json",
        "run": "application/vnd.flowlab.run+json"}
MARKS = ("added", "removed", "changed")
# who hands shared memory to whom: push and model init/load write it, user jobs use it, pull and model save read it
JOB_ORDER_FLOW = {"push": 0, "model_io": 0, "user": 1, "pull": 2, "model_save": 2, "main": 3}
SHARED_GROUP_OVER = 8  # more shared blocks than this (a model's variables) go into one "shared memory" group


@contextmanager
def _no_gc() -> Iterator[None]:
    """A payload is ~10 small lists per node, all alive until it returns: the cyclic collector would rescan
    them hundreds of times (over half the time of a 10,000-task Plan) and can free none of them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _head(kind: str, title: str) -> dict[str, Any]:
    return {"flowlab_payload": PAYLOAD_VERSION, "kind": kind, "title": title}


def _job_label(name: str, kind: str) -> str:
    return f"{name} ({kind})"


def jobset_payload(job_set: JobSet, passes: Sequence[Any] | None = None, *, title: str | None = None,
                   loc_names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The jobs of a session (user, push, pull, model-io, main) as one grouped graph."""
    with _no_gc():
        return _jobset_payload(job_set, passes, title, loc_names)


def _jobset_payload(job_set: JobSet, passes: Sequence[Any] | None, title: str | None,
                    loc_names: Mapping[str, str] | None) -> dict[str, Any]:
    g = GraphBuilder()
    creators, loc = created_by_pass(passes), loc_mapper(loc_names)
    jobs = list(job_set)
    op_node: dict[tuple[int, str], str] = {}
    for j, job in enumerate(jobs):
        job_gid = g.group(f"g:job:{j}", _job_label(job.name, job.kind), None, "job", job.kind)
        parents = g.scoped(job_gid, [(op.name, op.created_by) for op in job.ops])
        sbp = sbp_sections(job)
        for i, op in enumerate(job.ops):
            nid = f"o:{j}:{i}"
            op_node[(j, op.name)] = nid
            detail = {"title": f"{op.name} ({op.op_type})",
                      "sections": op_sections(job, op, creators.get((job.name, op.name)), loc)
                      + ([sbp[op.name]] if op.name in sbp else [])}
            kind = "interface" if op.op_type in INTERFACE_OP_TYPES else "op"
            g.node(nid, op.name, kind, parents[i], detail, type=op.op_type)
        for op in job.ops:
            target = op_node[(j, op.name)]
            for lbn in op.input_lbns:
                source = op_node.get((j, lbn.rpartition("/")[0]))
                if source is not None:
                    desc = job.blob_descs.get(lbn)
                    g.edge(source, target, "data", str(desc) if desc is not None else "")
            for name in op.ctrl_in_op_names:
                if (j, name) in op_node:
                    g.edge(op_node[(j, name)], target, "ctrl")
    shared = job_set.shared_interfaces
    index = {job.name: j for j, job in enumerate(jobs)}
    parent = g.group("g:shared", "shared memory", None, "memory") if len(shared) > SHARED_GROUP_OVER else None
    for k, (name, holders) in enumerate(shared.items()):
        tenants = [(index[h], op_node[(index[h], name)]) for h in holders]
        job = jobs[tenants[0][0]]
        lbns = job.op(name).output_lbns
        label = str(job.blob_descs[lbns[0]]) if lbns and lbns[0] in job.blob_descs else ""
        mid = f"m:{k}"
        detail = {"title": f"shared blob {name}", "sections": [section("shared memory", [
            ["interface op", name], ["blob", label or "?"], ["jobs", ", ".join(holders)]])]}
        g.node(mid, f"{name} (shared)", "memblock", parent, detail)
        _hand_off(g, mid, [(_role(jobs[j].kind, jobs[j].name), nid) for j, nid in tenants], label)
    n_user = len(job_set.of_kind("user"))
    head = _head("jobset", title or f"job set: {len(jobs)} jobs ({n_user} user)")
    return {**head, "graph": g.finish(), "shared_interfaces": {k: list(v) for k, v in shared.items()}}


def _role(kind: str, job_name: str) -> str:
    return "model_save" if kind == "model_io" and job_name.endswith("ModelSave") else kind


def _hand_off(g: GraphBuilder, block: str, tenants: list[tuple[str, str]], label: str) -> None:
    """Edges through a shared block: from the tenants of the earliest job kind (push, model io) to the block,
    and from the block to the others (user, then pull), so push -> user -> pull reads top-down."""
    first = min(JOB_ORDER_FLOW.get(kind, 1) for kind, _ in tenants)
    for kind, nid in tenants:
        if JOB_ORDER_FLOW.get(kind, 1) == first and first < max(JOB_ORDER_FLOW.get(k, 1) for k, _ in tenants):
            g.edge(nid, block, "shared_mem", label)
        else:
            g.edge(block, nid, "shared_mem", label)



def plan_payload(plan: Plan, job_set: JobSet | None = None, *, passes: Sequence[Any] | None = None,
                 marks: Mapping[str, str] | None = None, title: str | None = None,
                 loc_names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The Plan as one grouped graph (job -> scope -> task, lanes by machine and thread, named by what runs there:
    ``lane_names``). ``marks`` maps node ids (``t:<task_id>``, ``b:<block>``) or register ids (``r:<id>``, classes
    on its edges) to a diff mark."""
    with _no_gc():
        return _plan_payload(plan, job_set, passes, marks, title, loc_names)


def _task_sbp(job: Job, op_name: str, boxing: list[int] | None, cache: dict[str, dict[str, Any]]) -> list[Any]:
    """The op's "sbp" section for one of its tasks, its boxing tasks as node ids (the detail pane links them)."""
    if job.name not in cache:
        cache[job.name] = sbp_sections(job)
    sec = cache[job.name].get(op_name)
    if sec is None:
        return []
    rows = [*sec["rows"], ["boxing tasks", ", ".join(f"t:{t}" for t in boxing) if boxing else "none"]]
    return [{**sec, "rows": rows}]


def _plan_payload(plan: Plan, job_set: JobSet | None, passes: Sequence[Any] | None, marks: Mapping[str, str] | None,
                  title: str | None, loc_names: Mapping[str, str] | None) -> dict[str, Any]:
    g = GraphBuilder()
    idx = PlanIndex(plan.tasks, plan.mem_blocks)
    creators, loc = created_by_pass(passes), loc_mapper(loc_names)
    jobs = {job.name: job for job in job_set} if job_set is not None else {}
    names, kinds = plan.job_names, plan.job_kinds
    lanes = sorted({(t.machine_id, t.thrd_id) for t in plan.tasks})
    lane_name = lane_names(plan.tasks)  # "gpu:0 compute", "cpu tick", ...: what each (machine, thread) runs
    g.lanes = [lane_name[lane] for lane in lanes] if len(lanes) > 1 else []
    devices = task_devices(plan.tasks)  # {} on one device: one-device payloads stay as they were
    job_blobs: dict[str, JobBlobs] = {}  # boxing notes' lookups, per job
    # an op's "sbp" section (explain_sbp, as the jobs view has it) on its tasks, with the boxing tasks it caused
    caused = boxing_causes(plan.tasks, idx.task_by_id) if devices else {}
    sbp_of: dict[str, dict[str, Any]] = {}
    by_job: dict[int, list[Any]] = {}
    for task in plan.tasks:
        by_job.setdefault(task.job_id, []).append(task)
    for job_id in sorted(by_job):
        tasks = by_job[job_id]
        job_name = names[job_id] if job_id < len(names) else str(job_id)
        kind = kinds[job_id] if job_id < len(kinds) else "?"
        job_gid = g.group(f"g:job:{job_id}", _job_label(job_name, kind), None, "job", kind)
        scoped = [(t.name, t.exec_sequence[0].created_by if t.exec_sequence else "system") for t in tasks]
        parents = g.scoped(job_gid, scoped)
        job = jobs.get(job_name)
        for task, parent in zip(tasks, parents, strict=True):
            sections = idx.task_sections(task, names)
            if job is not None:
                for op in task.exec_sequence:
                    if job.has_op(op.name):
                        sections[1:1] = op_sections(job, op, creators.get((job_name, op.name)), loc)
                first = task.exec_sequence[0].name if task.exec_sequence else ""
                if devices and job.has_op(first):
                    sections += _task_sbp(job, first, caused.get((job_id, first)), sbp_of)
            extra = {"lane": lane_name[(task.machine_id, task.thrd_id)]} if g.lanes else {}
            if task.task_id in devices:
                extra["device"] = devices[task.task_id]
                if task.sbp_signature is not None and task.parallel_num > 1:
                    extra["sbp"] = str(task.sbp_signature)  # one hover away: the box's tooltip
            if task.is_boxing:
                op = task.exec_sequence[0]
                if devices and job is not None and job.name not in job_blobs:
                    job_blobs[job.name] = JobBlobs(job)
                note = boxing_note(task, job_blobs.get(job_name)) if devices else None
                blob = op.attrs.get("lbi") or ", ".join(op.input_lbns) or "?"  # a CopyCommNet's is its input's
                rows = [["kind", op.op_type], ["blob", str(blob)], ["task_type", task.task_type]]
                if note:
                    extra["note"] = note
                    rows.insert(0, ["converts", note])
                sections.insert(1, section("boxing", rows))
            node = g.node(f"t:{task.task_id}", task.name, "task", parent,
                          {"title": f"{task.name} ({task.task_type})", "sections": sections}, type=task.task_type,
                          **extra)
            if task.is_boxing:
                node["classes"].append("boxing")
    for regst in idx.regst_by_id.values():
        label = blob_label(regst)
        kind = "ctrl" if regst.is_ctrl else "data"
        sbp = edge_sbp(regst, idx.task_by_id) if devices and label else None
        label = f"{sbp} {label}" if sbp else label  # S(0) f32[8,4]: how the blob lies, and each device's piece
        for consumer in regst.consumer_task_ids:
            g.edge(f"t:{regst.producer_task_id}", f"t:{consumer}", kind, label, regst=f"r:{regst.regst_desc_id}")
    _plan_blocks(g, plan, idx)
    if marks:
        _apply_marks(g, marks, idx)
    summary = {"tasks": len(plan.tasks), "regsts": len(idx.regst_by_id), "mem_blocks": len(plan.mem_blocks)}
    head = _head("plan", title or f"Plan: {len(plan.tasks)} tasks in {len(by_job)} jobs")
    return {**head, "graph": g.finish(), "summary": summary}


def _plan_blocks(g: GraphBuilder, plan: Plan, idx: PlanIndex) -> None:
    """A ``memblock`` node for every block two or more jobs share (the push -> user -> pull hand-off)."""
    shared = [b for b in plan.mem_blocks if len(set(b.job_ids)) > 1]
    parent = g.group("g:shared", "shared memory", None, "memory") if len(shared) > SHARED_GROUP_OVER else None
    for block in shared:
        regsts = [idx.regst_by_id[r] for r in idx.tenants.get(block.mem_block_id, ())]
        tenants = []
        for regst in regsts:
            task = idx.task_by_id[regst.producer_task_id]
            kind = plan.job_kinds[task.job_id] if task.job_id < len(plan.job_kinds) else "?"
            tenants.append((_role(kind, plan.job_names[task.job_id]), f"t:{task.task_id}"))
        label = blob_label(regsts[0]) if regsts else ""
        rows = [["size", f"{block.mem_size} B"], ["mem_case", block.mem_case],
                ["jobs", ", ".join(plan.job_names[j] for j in block.job_ids if j < len(plan.job_names))]]
        rows += [[f"r{r.regst_desc_id}", f"{idx.task_name(r.producer_task_id)} + {r.mem_block_offset}"
                  + (f" (in place of r{r.inplace_consumed_regst_desc_id})" if r.inplace_consumed_regst_desc_id >= 0
                     else "")
                  + (f" (holds r{r.piece_inplace_consumed_regst_desc_id} at +{r.piece_inplace_offset})"
                     if r.piece_inplace_consumed_regst_desc_id >= 0 else "")] for r in regsts]
        g.node(f"b:{block.mem_block_id}", f"block {block.mem_block_id}: {label}", "memblock", parent,
               {"title": f"memory block {block.mem_block_id}", "sections": [section("memory block", rows)]})
        _hand_off(g, f"b:{block.mem_block_id}", tenants, label)


def _apply_marks(g: GraphBuilder, marks: Mapping[str, str], idx: PlanIndex) -> None:
    nodes = {n["id"]: n for n in g.nodes}
    edges_of: dict[str, list[dict[str, Any]]] = {}
    for edge in g.edges:
        if "regst" in edge:
            edges_of.setdefault(edge["regst"], []).append(edge)
    for key, mark in marks.items():
        if mark not in MARKS:
            raise ValueError(f"plan_payload: mark {mark!r} for {key!r} is not one of {', '.join(MARKS)}")
        if key in nodes:
            nodes[key]["classes"].append(mark)
        elif key in edges_of or (key.startswith("r:") and key[2:].isdigit() and int(key[2:]) in idx.regst_by_id):
            for edge in edges_of.get(key, ()):
                edge.setdefault("classes", []).append(mark)
            # edges are bundled or dropped when groups collapse: the producer's box keeps the mark ("out-changed")
            producer = nodes.get(f"t:{idx.regst_by_id[int(key[2:])].producer_task_id}")
            if producer is not None and f"out-{mark}" not in producer["classes"]:
                producer["classes"].append(f"out-{mark}")
        elif not (key.startswith("b:") and key[2:].isdigit() and int(key[2:]) in idx.block_by_id):
            sample = ", ".join(list(nodes)[:3])
            raise KeyError(f"plan_payload: marks name {key!r}, which is no node or register of this Plan "
                           f"(node ids look like {sample}; registers like r:0)")


def run_payload(plan: Plan, job_set: JobSet | None, recording: Any, *, title: str | None = None,
                passes: Sequence[Any] | None = None) -> dict[str, Any]:
    """A recorded run over ``plan``: ``recording`` has ``acts`` and ``memory`` (a mapping or attributes) as in
    payload.md; integer task/register ids are accepted and written as ``t:<id>`` / ``r:<id>``."""
    acts = _get(recording, "acts")
    memory = _get(recording, "memory")
    base = plan_payload(plan, job_set, passes=passes)
    node_ids = {n["id"] for n in base["graph"]["nodes"]}
    out_acts = []
    for i, act in enumerate(acts):
        act = dict(act) if isinstance(act, Mapping) else dict(vars(act))
        node = _ref("t", act.get("node", act.get("task_id")))
        if node not in node_ids:
            raise KeyError(f"run_payload: act {i} names task {node!r}, which is not in this Plan")
        blobs = {_ref("r", k): _finite(v) for k, v in (act.get("blobs") or {}).items()}
        out = {"index": int(act.get("index", i)), "node": node, "actor": str(act.get("actor", "")),
               "job": str(act.get("job", "")), "reads": [_ref("r", r) for r in act.get("reads", ())],
               "writes": [_ref("r", w) for w in act.get("writes", ())], "blobs": blobs}
        if act.get("tier"):  # which kernel tier ran it (kernels/tiered.py): "reference" or "numba"
            out["tier"] = str(act["tier"])
        out_acts.append(out)
    memory = _finite(dict(memory) if isinstance(memory, Mapping) else dict(vars(memory)))
    head = _head("run", title or f"run: {len(out_acts)} acts over {len(plan.tasks)} tasks")
    return {**head, "graph": base["graph"], "acts": out_acts, "memory": memory}


def _get(obj: Any, key: str) -> Any:
    return obj[key] if isinstance(obj, Mapping) else getattr(obj, key)


def _ref(prefix: str, value: Any) -> str:
    return f"{prefix}:{value}" if isinstance(value, int) else str(value)


def _finite(value: Any) -> Any:
    """JSON has no NaN or Infinity: such stats travel as the strings "NaN", "Infinity", "-Infinity"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, str):  # numpy scalars and arrays
        return _finite(value.tolist())
    return value
