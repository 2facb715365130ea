"""Dynamic blobs at run time (OneFlow's blob header and Kernel::ForwardHeader / ForwardShape).

A dynamic blob (``BlobDesc.is_dynamic``: made from a ``tp.ListNumpy`` placeholder, and every op output downstream
of one) has its static shape as an upper bound; its register's memory is sized for that, and the register's
``header`` (runtime/regst.py) holds its current shape, written by the act that produces it. The data is the
contiguous prefix of the static buffer (``cut``), as in OneFlow.

An actor whose op reads a dynamic blob runs its op's own shape inference on the current input shapes at each act
(cached by the tuple of shapes), builds its kernel for those shapes through the registry's ``make_kernel`` (cached
too), hands it arrays cut to the current shapes, and writes its outputs' shapes into their headers. The actors of
the interface copies, the push (ForeignInput) and the pull or watch (ForeignOutput, ForeignWatch) carry headers
the same way. A register that holds the pieces of several devices (the logical blob of a mirrored placeholder
before the push job's boxing splits it, or after the return's boxing gathers it) has a header of ``Pieces``: each
device's piece at the start of its static box on axis 0; the boxing copies move whole boxes and the headers follow.
Static blobs never pay for any of this: an actor without a dynamic input keeps its kernel as it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir import BlobDesc, OpConf
from ..ir.mirrored import MirroredList
from ..ir.slice_box import Box

if TYPE_CHECKING:
    from collections import deque

    from .actor import Actor
    from .regst import Regst
    from .runtime import Runtime

Kernel = Callable[[list[Any], list[Any]], None]
DOCS = "docs/oneflow-api.md, 'Dynamic shapes'"


@dataclass(frozen=True)
class OpShapeRules:
    """What a dynamic blob's kernel asks of its op: its shape inference (``infer(op, {arg: descs})``, ops/registry's
    ``infer_op``) and, for the ops whose output shape is in the input's values, how to read it (``from_data``, by
    op type). The op registry sits above the runtime, so ``import flowlab`` hands these in (``use_op_shape_rules``)."""

    infer: Callable[[OpConf, dict[str, tuple[BlobDesc, ...]]], Mapping[str, Sequence[BlobDesc]]]
    from_data: Mapping[str, Callable[[list[Any]], list[tuple[int, ...]]]]


_RULES: OpShapeRules | None = None


def use_op_shape_rules(rules: OpShapeRules) -> None:
    global _RULES
    _RULES = rules


def op_shape_rules() -> OpShapeRules:
    if _RULES is None:
        raise RuntimeError("runtime.dynamic has no op shape rules: import flowlab (it hands in the op registry's "
                           "inference with use_op_shape_rules) before running a Plan")
    return _RULES


class Pieces(tuple):
    """The header of a register holding several devices' pieces of a mirrored blob: ``((start_row, shape), ...)``,
    each piece laid from the start of row ``start_row`` (axis 0) of the register's static shape."""


def cut(array: Any, shape: tuple[int, ...]) -> Any:
    """The current blob: the first ``prod(shape)`` elements of the static array, as ``shape`` (a view)."""
    if array.shape == shape:
        return array
    return array.reshape(-1)[:math.prod(shape)].reshape(shape)


def pieces_of(array: Any, header: Any) -> list[Any]:
    """The pieces a register holds, as views: one for a shape header, one per device for ``Pieces``."""
    if not isinstance(header, Pieces):
        return [cut(array, array.shape if header is None else header)]
    row = math.prod(array.shape[1:])
    flat = array.reshape(-1)
    return [flat[start * row:start * row + math.prod(shape)].reshape(shape) for start, shape in header]


def has_dynamic_input(rt: Runtime, actor: Actor) -> bool:
    descs = rt.plan.regst_descs
    lbns = set(actor.task.exec_sequence[0].input_lbns)
    return any(d.is_dynamic for rid in actor.readable for lbn, d in descs[rid].lbi2blob_desc.items() if lbn in lbns)


def _slot(rt: Runtime, slots: dict[int, deque[Regst]], lbn: str, rid: int = -1) -> deque[Regst]:
    """The actor's slot (consumed or produced) of the register holding ``lbn``."""
    if rid >= 0:
        return slots[rid]
    return next(q for i, q in slots.items() if lbn in rt.plan.regst_descs[i].lbi2blob_desc)


def op_kernel(rt: Runtime, actor: Actor, ins: Sequence[tuple[int, str]], in_descs: Sequence[BlobDesc],
              out_descs: Sequence[BlobDesc], build: Callable[[list[BlobDesc], list[BlobDesc]], Kernel]) -> Kernel:
    """The kernel of an op that reads a dynamic blob: per act, its outputs' shapes by the op's inference on the
    current input shapes (``ins``: (register or -1, lbn) per input), and a kernel built for them (``build``)."""
    from ..errors import OpInferError

    op = actor.task.exec_sequence[0]
    rules = op_shape_rules()
    in_slots = [_slot(rt, actor.readable, lbn, rid) for rid, lbn in ins]
    out_lbns = op.output_lbns
    out_slots = [_slot(rt, actor.writable, lbn) for lbn in out_lbns]
    statics = [d.shape for d in in_descs]
    cache: dict[tuple[Any, ...], tuple[Kernel, tuple[tuple[int, ...], ...]]] = {}
    dynamic_out = [d.is_dynamic for d in out_descs]

    def dynamic_outs(shapes: tuple[tuple[int, ...], ...]) -> Any:
        return ((q, lbn, s) for q, lbn, s, d in zip(out_slots, out_lbns, shapes, dynamic_out) if d)

    def shaped(shapes: tuple[Any, ...]) -> tuple[Kernel, tuple[tuple[int, ...], ...]]:
        if any(isinstance(s, Pieces) for s in shapes):
            raise NotImplementedError(
                f"op {op.name!r} ({op.op_type}) reads a dynamic blob whose register holds several devices' pieces "
                "(a consistent view of a mirrored blob): flowlab runs dynamic blobs in the mirrored view only "
                f"({DOCS})")
        # the current shapes, as static ones: the op's inference on them is its kernel-time shape inference
        # (OneFlow's kernels InferShape: concat joins the current extents, not max_dim_size)
        current = [BlobDesc(s, d.dtype) for d, s in zip(in_descs, shapes)]
        it = iter(current)
        grouped = {arg: tuple(next(it) for _ in lbns) for arg, lbns in op.inputs.items()}
        try:
            inferred = rules.infer(op, grouped)
        except OpInferError as err:
            where = f"{op.loc}: " if op.loc else ""
            raise OpInferError(f"{where}op {op.name!r} ({op.op_type}) on its dynamic inputs' current shapes "
                               f"{[list(s) for s in shapes]}: {err}") from None
        outs = [d for arg, lbns in op.outputs.items() for _, d in zip(lbns, inferred.get(arg, []))]
        # an output the op makes static (cast_to_static_shape, shape_elem_cnt) keeps its static shape and no header
        outs = [d if static.is_dynamic else static for d, static in zip(outs, out_descs)]
        for lbn, d, static in zip(out_lbns, outs, out_descs):
            if len(d.shape) != len(static.shape) or d.elem_cnt > static.elem_cnt:
                raise OpInferError(f"op {op.name!r} ({op.op_type}): output {lbn} has current shape {list(d.shape)}, "
                                   f"which does not fit its static shape {list(static.shape)}")
        return build(current, outs), tuple(d.shape for d in outs)

    from_data = rules.from_data.get(op.op_type)

    def dynamic(in_arrays: list[Any], out_arrays: list[Any], *stream: Any) -> None:  # a CUDA kernel takes a stream
        shapes = tuple(q[0].header.get(lbn, s) for q, (_, lbn), s in zip(in_slots, ins, statics))
        entry = cache.get(shapes)
        if entry is None:
            entry = cache[shapes] = shaped(shapes)
        kernel, out_shapes = entry
        current = [cut(a, s) for a, s in zip(in_arrays, shapes)]
        if from_data is not None:  # the output's shape is in the input's values (OneFlow's kernel sets the header)
            kernel(current, out_arrays, *stream)
            out_shapes = tuple(from_data([_host(a) for a in current]))
        else:
            kernel(current, [cut(a, s) for a, s in zip(out_arrays, out_shapes)], *stream)
        for q, lbn, s in dynamic_outs(out_shapes):
            q[0].header[lbn] = s

    return dynamic


def _host(array: Any) -> Any:
    return array.copy_to_host() if hasattr(array, "copy_to_host") else array


def copy_kernel(rt: Runtime, actor: Actor, kernel: Kernel) -> Kernel:
    """An interface or distribute copy of a dynamic blob: the whole static buffer (the piece is its prefix) and
    the header."""
    op = actor.task.exec_sequence[0]
    (in_lbn,), (out_lbn,) = op.input_lbns, op.output_lbns
    src, dst = _slot(rt, actor.readable, in_lbn), _slot(rt, actor.writable, out_lbn)

    def copy_with_header(in_arrays: list[Any], out_arrays: list[Any]) -> None:
        kernel(in_arrays, out_arrays)
        header = src[0].header.get(in_lbn)
        if header is None:
            dst[0].header.pop(out_lbn, None)
        else:
            dst[0].header[out_lbn] = header

    return copy_with_header


def push_kernel(rt: Runtime, actor: Actor, op: OpConf) -> Kernel:
    """ForeignInput of a dynamic blob: the pushed piece (one device) or pieces (one per device, each at the start
    of its device's static box on axis 0) and the header."""
    buffer = rt.buffer(op.attrs["ofblob_buffer_name"])
    (lbn,) = op.output_lbns
    slot = _slot(rt, actor.writable, lbn)

    def push(in_arrays: list[Any], out_arrays: list[Any]) -> None:
        value, out = buffer.popleft().push_array, out_arrays[0]
        if not isinstance(value, (list, tuple)):
            cut(out, value.shape)[...] = value
            slot[0].header[lbn] = value.shape
            return
        rows, flat = out.shape[0] // len(value), out.reshape(-1)
        row = math.prod(out.shape[1:])
        for k, piece in enumerate(value):
            flat[k * rows * row:k * rows * row + piece.size] = piece.reshape(-1)
        slot[0].header[lbn] = Pieces((k * rows, piece.shape) for k, piece in enumerate(value))

    return push


def pulled(array: Any, header: Any, parts: int) -> Any:
    """What a pull or a watch of a dynamic blob hands over: copies of its current piece(s); a MirroredList for a
    mirrored return (``parts``: its device count), whose logical blob is the pieces joined where they can be."""
    pieces = [p.copy() for p in pieces_of(array, header)]
    try:  # the blob seen consistently: its pieces joined on axis 0
        logical = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]
    except ValueError:  # pieces of different shapes beyond axis 0: no one array holds them
        logical = None
    if parts:
        return MirroredList(pieces, logical)
    if logical is None:
        raise ValueError(f"a dynamic blob of pieces of shapes {[p.shape for p in pieces]} has no consistent value "
                         "(they differ beyond axis 0): ask for it per device, as tp.ListNumpy")
    return logical


def boxing_kernel(rt: Runtime, actor: Actor, kernel: Kernel) -> Kernel:
    """A boxing task moving a dynamic blob: the static boxes move as for any blob (each piece lies inside its
    box). A copy that cuts and joins on axis 0 (the mirrored view's push and return) lists in the output's header
    the pieces whose boxes it received; any other boxing (an add of partial sums, a cut on another axis) takes
    only pieces of their full static shape (a weight's gradient made from dynamic data) and refuses others,
    naming the task."""
    task = actor.task
    op = task.exec_sequence[0]
    (lbn,) = op.output_lbns
    out_box = Box(tuple(map(tuple, op.attrs["out_slice"])))
    in_boxes = [Box(tuple(map(tuple, b))) for b in op.attrs["in_slice"]]
    view = tuple(op.attrs["view_shape"])
    on_rows = op.op_type == "slice_boxing_copy" and all(
        all(r == (0, d) for r, d in zip(box.ranges[1:], view[1:])) for box in (out_box, *in_boxes))
    rids = [rid for arg in op.inputs for rid in task.consumed_regst_desc_id[arg]]
    srcs = [_slot(rt, actor.readable, lbn, rid) for rid in rids]
    dst = _slot(rt, actor.writable, lbn, task.produced_regst_desc["out"].regst_desc_id)
    in_statics = [rt.plan.regst_descs[rid].lbi2blob_desc[lbn].shape for rid in rids]  # a box may be a flat view's
    o_lo, o_hi = out_box.ranges[0] if view else (0, 0)

    def boxing_with_header(in_arrays: list[Any], out_arrays: list[Any]) -> None:
        headers = [q[0].header.get(lbn, static) for q, static in zip(srcs, in_statics)]
        whole = all(h == static for h, static in zip(headers, in_statics))
        if whole or not on_rows:  # pieces of their static shapes: boxed as any blob
            if not whole:
                raise NotImplementedError(
                    f"boxing task {task.name} ({op.op_type}, boxes {[str(b) for b in in_boxes]} -> {out_box}) moves "
                    f"dynamic blob {lbn} whose pieces have shapes {[list(h) for h in headers]}, not their static "
                    f"ones: flowlab boxes dynamic pieces only by copies that cut and join on axis 0 (the mirrored "
                    f"view; {DOCS})")
            kernel(in_arrays, out_arrays)
            dst[0].header.pop(lbn, None)
            return
        kernel(in_arrays, out_arrays)
        pieces = []
        for header, box in zip(headers, in_boxes):
            lo = box.ranges[0][0]
            for start, shape in (header if isinstance(header, Pieces) else ((0, header),)):
                if o_lo <= lo + start < o_hi:
                    pieces.append((lo + start - o_lo, shape))
        dst[0].header[lbn] = pieces[0][1] if len(pieces) == 1 and pieces[0][0] == 0 else Pieces(pieces)

    return boxing_with_header
