"""Boxing: the sub-graph between an op's tasks and a consumer's tasks when their SBP or placement disagree.

One entry, ``build_sub_task_graph``, tries OneFlow's builders in OneFlow's order (``task_graph.cpp``'s
``ChainSubTskGphBuilder``; CPU only, so no NCCL collectives), first match wins:

1. ToInterface: into an interface op, a whole blob (B or one device) goes to B/one device from the nearest
   source, and to S(n) through one slice-copy node per destination on the *source* machine (how the push job
   scatters a batch over the devices of an ``Input``);
2. OneToOne: one device to one device, or equal parallel_num and equal SBP: parallel_id to parallel_id;
3. B21: a whole blob to one device: the nearest source;
4. SliceBoxing: ``System-Boxing-BoxingCopy-*`` / ``System-Boxing-BoxingAdd-*`` nodes on the destination devices:
   S->B (gather all slices), S->S (gather the intersecting slices), P->S (add the destination's slice of every
   addend), B->S (slice the nearest copy), P->B (P->S on the flattened blob, then S->B: reduce-scatter then
   all-gather, unless the blob has fewer elements than devices: then each destination adds all addends);
5. NaiveB2B: B to B on another placement: the nearest source; 6. NaiveB2P: the nearest destination gets the
   blob, the others a ``System-Boxing-Zeros-*`` node.

A register crossing machines goes through a CopyCommNet task on the receiving machine (``proxy``). Each
decision is returned with its builder's name and a comment, for the debug-mode CSV log (OneFlow's
``boxing/log/<job_id>.csv``). Across machines, slice boxing first adds or concatenates each remote machine's
pieces there and sends one blob, as OneFlow does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import CompileError
from ..ir import BlobDesc, OpConf, SbpParallel, split
from .slices import Box, box_of, full_box


class Node(Protocol):
    """A task of the plan builder, as boxing sees it."""

    machine_id: int
    device_id: int


class TaskGraph(Protocol):
    def proxy(self, node: Any, machine_id: int) -> Any:
        """``node`` itself on its machine, else a CopyCommNet task on ``machine_id`` reading its register."""

    def boxing_node(self, kind: str, edge: Edge, machine_id: int, device_id: int,
                    inputs: list[tuple[Any, Box]], out_box: Box, view_shape: tuple[int, ...],
                    out_desc: BlobDesc) -> Any:
        """A new slice-boxing task (``kind`` "copy", "add" or "zeros") on ``machine_id``."""


@dataclass(frozen=True)
class Edge:
    """One logical blob flowing from an op's tasks to a consumer op's tasks."""

    job_id: int
    src_op: OpConf
    dst_op: OpConf
    lbn: str
    desc: BlobDesc  # logical
    src_tasks: tuple[Any, ...]
    dst_tasks: tuple[Any, ...]
    src_sbp: SbpParallel
    dst_sbp: SbpParallel
    dst_is_interface: bool

    def log_row(self, builder: str, comment: str) -> str:
        """One line of OneFlow's boxing log (columns in viz/dump.py's BOXING_LOG_HEADER)."""
        def conf(op: OpConf) -> str:
            tag = op.parallel_conf.device_tag.upper()
            return " ".join(f"{name.partition(':')[0]}:{tag}:{name.partition(':')[2]}"
                            for name in op.parallel_conf.device_names)

        shape = "(" + ",".join(map(str, self.desc.shape)) + ")"
        return ",".join([self.src_op.name, self.dst_op.name, conf(self.src_op), conf(self.dst_op),
                         str(self.src_sbp), str(self.dst_sbp), self.lbn, self.desc.dtype.name, f'"{shape}"',
                         builder, comment])


@dataclass(frozen=True)
class BoxingDecision:
    nodes: tuple[Any, ...]  # per destination task, the task whose register it consumes
    builder: str
    comment: str = ""


def nearest(sources: tuple[Any, ...], dst: Node) -> Any:
    """OneFlow's nearest source: on the same device, else on the same machine, else the first."""
    for s in sources:
        if (s.machine_id, s.device_id) == (dst.machine_id, dst.device_id):
            return s
    return next((s for s in sources if s.machine_id == dst.machine_id), sources[0])


def build_sub_task_graph(g: TaskGraph, e: Edge) -> BoxingDecision:
    n, m = len(e.src_tasks), len(e.dst_tasks)
    src, dst = e.src_sbp, e.dst_sbp
    src_whole, dst_whole = n == 1 or src.is_broadcast, m == 1 or dst.is_broadcast
    if n == 1 and m == 1:
        return BoxingDecision((g.proxy(e.src_tasks[0], e.dst_tasks[0].machine_id),), "OneToOneSubTskGphBuilder")
    if e.dst_is_interface and src_whole:
        if dst_whole:
            return _nearest_each(g, e, "ToInterfaceSubTskGphBuilder", "BuildSubTaskGphB2B")
        if dst.is_split:
            nodes = []
            for i, d in enumerate(e.dst_tasks):
                s = nearest(e.src_tasks, d)
                view = e.desc.shape
                node = g.boxing_node("copy", e, s.machine_id, s.device_id, [(s, full_box(view))],
                                     box_of(view, dst, i, m), view, _piece(e.desc, dst, i, m))
                nodes.append(g.proxy(node, d.machine_id))
            return BoxingDecision(tuple(nodes), "ToInterfaceSubTskGphBuilder", "BuildSubTaskGphB2S")
    if n == m and src == dst:
        proxies = tuple(g.proxy(s, d.machine_id) for s, d in zip(e.src_tasks, e.dst_tasks))
        return BoxingDecision(proxies, "OneToOneSubTskGphBuilder")
    if src_whole and m == 1:
        return _nearest_each(g, e, "B21SubTskGphBuilder")
    sliced = _slice_boxing(g, e)
    if sliced is not None:
        return sliced
    if src.is_broadcast and dst.is_broadcast:
        return _nearest_each(g, e, "NaiveB2BSubTskGphBuilder")
    if src_whole and dst.is_partial_sum:
        nodes = []
        chosen = min(range(m), key=lambda i: _distance(e.src_tasks, e.dst_tasks[i]))
        for i, d in enumerate(e.dst_tasks):
            s = nearest(e.src_tasks, d)
            if i == chosen:
                nodes.append(g.proxy(s, d.machine_id))
            else:  # a zero addend, made on the destination once the source has produced (its trigger)
                view = e.desc.shape
                nodes.append(g.boxing_node("zeros", e, d.machine_id, d.device_id, [(g.proxy(s, d.machine_id),
                                           full_box(view))], full_box(view), view, e.desc))
        return BoxingDecision(tuple(nodes), "NaiveB2PSubTskGphBuilder")
    raise CompileError(
        f"boxing not supported: blob {e.lbn!r} {e.desc} goes from op {e.src_op.name!r} ({src} on "
        f"{e.src_op.parallel_conf}) to op {e.dst_op.name!r} ({dst} on {e.dst_op.parallel_conf}); no boxing builder "
        "handles that pair of SBPs")


def _distance(sources: tuple[Any, ...], d: Node) -> int:
    s = nearest(sources, d)
    return 0 if (s.machine_id, s.device_id) == (d.machine_id, d.device_id) else (1 if s.machine_id == d.machine_id
                                                                                   else 2)


def _nearest_each(g: TaskGraph, e: Edge, builder: str, comment: str = "") -> BoxingDecision:
    nodes = tuple(g.proxy(nearest(e.src_tasks, d), d.machine_id) for d in e.dst_tasks)
    return BoxingDecision(nodes, builder, comment)


def _piece(desc: BlobDesc, sbp: SbpParallel, i: int, n: int) -> BlobDesc:
    return BlobDesc(box_of(desc.shape, sbp, i, n).shape, desc.dtype, desc.is_dynamic)


def _slice_boxing(g: TaskGraph, e: Edge) -> BoxingDecision | None:
    n, m = len(e.src_tasks), len(e.dst_tasks)
    src, dst = e.src_sbp, e.dst_sbp
    view = e.desc.shape
    name = "SliceBoxingSubTskGphBuilder"
    if src.is_partial_sum and dst.is_broadcast:
        if e.desc.elem_cnt < m:  # too small to scatter: every destination adds all addends
            nodes = [_gather(g, e, "add", d, [(s, full_box(view)) for s in e.src_tasks], full_box(view), view, e.desc)
                     for d in e.dst_tasks]
            return BoxingDecision(tuple(nodes), name, "BuildSubTaskGphP2B")
        flat = (e.desc.elem_cnt,)
        parts = []
        for i, d in enumerate(e.dst_tasks):  # reduce-scatter the flattened blob ...
            out = box_of(flat, split(0), i, m)
            parts.append((_gather(g, e, "add", d, [(s, full_box(flat)) for s in e.src_tasks], out, flat,
                                  BlobDesc(out.shape, e.desc.dtype, e.desc.is_dynamic)), out))
        nodes = [_gather(g, e, "copy", d, parts, full_box(flat), flat, e.desc)  # ... then all-gather it
                 for d in e.dst_tasks]
        return BoxingDecision(tuple(nodes), name, "BuildSubTaskGphP2S->BuildSubTaskGphS2B")
    if not dst.is_split and not (dst.is_broadcast and src.is_split):
        return None
    if src.is_split:
        kind, comment = "copy", ("BuildSubTaskGphS2B" if dst.is_broadcast else "BuildSubTaskGphS2S")
    elif src.is_partial_sum:
        kind, comment = "add", "BuildSubTaskGphP2S"
    else:
        kind, comment = "copy", "BuildSubTaskGphB2S"
    nodes = []
    for i, d in enumerate(e.dst_tasks):
        out = box_of(view, dst, i, m)
        if src.is_broadcast:
            pieces = [(nearest(e.src_tasks, d), full_box(view))]
        else:
            pieces = [(s, box_of(view, src, j, n)) for j, s in enumerate(e.src_tasks)]
            if src.is_split:  # only the sources that hold part of this destination's slice
                pieces = [(s, b) for s, b in pieces if b.intersect(out) is not None]
        nodes.append(_gather(g, e, kind, d, pieces, out, view, _piece(e.desc, dst, i, m)))
    return BoxingDecision(tuple(nodes), name, comment)


def _gather(g: TaskGraph, e: Edge, kind: str, d: Node, pieces: list[tuple[Any, Box]], out: Box,
            view: tuple[int, ...], out_desc: BlobDesc) -> Any:
    """A node on destination ``d``'s device reading ``pieces``. Pieces on another machine are first combined
    there when there are several (added, or gathered into the part of ``out`` they hold: OneFlow's local
    concatenation before a cross-machine send), so each remote machine sends one blob through CopyCommNet."""
    inputs: list[tuple[Any, Box]] = []
    machines: dict[int, list[tuple[Any, Box]]] = {}
    for s, box in pieces:
        machines.setdefault(s.machine_id, []).append((s, box))
    for machine, group in machines.items():
        if machine == d.machine_id or len(group) == 1:
            inputs.extend((g.proxy(s, d.machine_id), box) for s, box in group)
            continue
        local = out
        if kind == "copy":  # the pieces of one machine are consecutive slices: their hull, within ``out``
            hull = Box(tuple((min(b.ranges[a][0] for _, b in group), max(b.ranges[a][1] for _, b in group))
                             for a in range(len(view))))
            local = hull.intersect(out) or out
        node = g.boxing_node(kind, e, machine, group[0][0].device_id, group, local, view,
                             BlobDesc(local.shape, e.desc.dtype, e.desc.is_dynamic))
        inputs.append((g.proxy(node, d.machine_id), local))
    return g.boxing_node(kind, e, d.machine_id, d.device_id, inputs, out, view, out_desc)
