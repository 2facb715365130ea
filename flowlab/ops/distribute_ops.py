"""OneFlow's distribute ops (``core/operator/distribute_{split,clone,concat,add}_op.cpp``,
``python/advanced/distribute_ops.py``): a consistent blob to one blob per device of its placement, and back.

- ``distribute_split(x, axis)``: ``in`` S(axis) -> ``out_i``, device i's balanced slice, a consistent blob on
  device i alone; ``distribute_clone(x)``: ``in`` B -> ``out_i``, the whole blob on device i;
- ``distribute_concat(xs, axis)``: ``in_i`` on device i -> ``out`` S(axis), the pieces joined; ``distribute_add(xs)``:
  ``in_i`` -> ``out`` P, their sum.

The op runs on the placement; its ``out_i`` (``in_i``) lives on device i only, so each device's task is a copy of
its own piece: the plan builder gives ``out_i`` to task i alone and has task i read only ``in_i``
(``compiler/plan_builder.py``, ``ONE_DEVICE_OUTPUTS``/``ONE_DEVICE_INPUTS``). Their SBP signatures are OneFlow's,
fixed (OneFlow's InferSbpSignature overrides choose nothing else): the builder gives every blob a hint. Gradients
are OneFlow's (``job_rewriter/distribute_grad.cpp``): split <-> concat, clone <-> add, named ``<op>_grad``.

``mirrored=True`` is the form flowlab uses for a mirrored blob, which it writes as one blob whose desc is one
device's piece: AutoDistributeSplit's split of a consistent S(0) blob (OneFlow's
``System-Mirrored-Blob-Auto-Converted-From-Consistent-Blob-DistributeSplit-<id>``) and its gradient's concat, one
input and one output, S(axis) both sides; its clone of a consistent B blob (``...-DistributeClone-<id>``,
``{in: B, out: B}``, each device's piece the whole blob) and its gradient's add (``{in: P, out: P}``: each device's
gradient is its piece of the sum, per-device pieces ``S(0)`` too) (compiler/mirrored_split.py).
"""

from __future__ import annotations

from typing import Any

from ..ir import BlobDesc, OpConf
from ..ir.sbp import BROADCAST, PARTIAL_SUM, balanced_split, input_bns, output_bns, split
from .registry import REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import SbpCtx, Signature

# is_variable_ref: OneFlow's conf field, set by AutoDistributeSplit where the input is a variable's output: each
# device's output is the variable's own memory (in place, compiler/inplace.py), not a copy
_ATTRS = {"axis": 0, "parallel_num": REQUIRED, "mirrored": False, "is_variable_ref": False}
# output (input) i of these lives on device i of the op's placement alone (but in the mirrored form)
ONE_DEVICE_OUTPUTS = frozenset({"distribute_split", "distribute_clone"})
ONE_DEVICE_INPUTS = frozenset({"distribute_concat", "distribute_add"})


def _with_axis(desc: BlobDesc, axis: int, size: int) -> BlobDesc:
    shape = list(desc.shape)
    shape[axis] = size
    return BlobDesc(tuple(shape), desc.dtype, desc.is_dynamic)


def _axis(ctx: InferCtx, desc: BlobDesc) -> int:
    axis = ctx.attrs["axis"]
    axis += len(desc.shape) if axis < 0 else 0  # OneFlow's FixAxis
    if not 0 <= axis < len(desc.shape):
        raise ctx.fail(f"axis {ctx.attrs['axis']} is not an axis of the input of shape {tuple(desc.shape)}")
    return axis


def _count(ctx: InferCtx, n: int) -> None:
    if len(ctx.inputs["in"]) != n:
        raise ctx.fail(f"it takes one blob per device of its placement, {n}; got {len(ctx.inputs['in'])}")


def _infer_split(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    desc, n = ctx.input("in"), ctx.attrs["parallel_num"]
    axis = _axis(ctx, desc)
    if ctx.attrs["mirrored"]:
        if desc.shape[axis] % n:
            raise ctx.fail(f"the input of shape {tuple(desc.shape)} has {desc.shape[axis]} rows on axis {axis}, "
                           f"which do not divide evenly over {n} devices, so the pieces would differ in shape")
        return {"out": [_with_axis(desc, axis, desc.shape[axis] // n)]}
    try:
        sizes = balanced_split(desc.shape[axis], n)
    except ValueError:
        raise ctx.fail(f"the input of shape {tuple(desc.shape)} has {desc.shape[axis]} rows on axis {axis}; each of "
                       f"the {n} devices needs at least one") from None
    return {"out": [_with_axis(desc, axis, size) for size in sizes]}


def _infer_concat(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    descs, n = ctx.inputs["in"], ctx.attrs["parallel_num"]
    axis = _axis(ctx, descs[0])
    if ctx.attrs["mirrored"]:
        return {"out": [_with_axis(descs[0], axis, descs[0].shape[axis] * n)]}
    _count(ctx, n)
    for i, desc in enumerate(descs):
        if desc.dtype != descs[0].dtype or len(desc.shape) != len(descs[0].shape) or any(
                a != b for k, (a, b) in enumerate(zip(desc.shape, descs[0].shape)) if k != axis):
            raise ctx.fail(f"blob {i} is {desc}, blob 0 {descs[0]}: they must agree off axis {axis}")
    sizes = tuple(d.shape[axis] for d in descs)
    if sizes != balanced_split(sum(sizes), n):  # each device's piece is its slice of the S(axis) output
        raise ctx.fail(f"the blobs have {list(sizes)} rows on axis {axis}; the output lies S({axis}) over {n} "
                       f"devices, whose slices are {list(balanced_split(sum(sizes), n))} rows")
    return {"out": [_with_axis(descs[0], axis, sum(sizes))]}


def _infer_clone(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [ctx.input("in")] * (1 if ctx.attrs["mirrored"] else ctx.attrs["parallel_num"])}


def _infer_add(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    descs = ctx.inputs["in"]
    if ctx.attrs["mirrored"]:  # each device's addend is one piece of a P blob: the devices' sum has its shape
        return {"out": [descs[0]]}
    _count(ctx, ctx.attrs["parallel_num"])
    for i, desc in enumerate(descs):
        if desc != descs[0]:
            raise ctx.fail(f"blob {i} is {desc}, blob 0 {descs[0]}: the addends must have one shape and dtype")
    return {"out": [descs[0]]}


def _split_rule(ctx: SbpCtx) -> list[Signature]:
    axis = split(ctx.attrs["axis"] % len(ctx.shape("in")))
    return [ctx.make({"in": axis, "out": axis if ctx.attrs["mirrored"] else BROADCAST})]


def _concat_rule(ctx: SbpCtx) -> list[Signature]:
    """B pieces -> S(axis). A mirrored concat (a DistributeSplit's gradient) joins each device's own piece whatever
    it lies as, as OneFlow's DistributeConcat joins its sub-blobs: a mirrored gradient lying P (a matmul's over the
    device's batch) is that device's gradient of its own rows, not a share of a sum to be reduced first."""
    axis = split(ctx.attrs["axis"] % len(ctx.shape("out")))
    if not ctx.attrs["mirrored"]:
        return [ctx.make({"in": BROADCAST, "out": axis})]
    lying = ctx.producer_sbp.get(ctx.bns("in")[0])
    return [ctx.make({"in": lying if lying is not None else axis, "out": axis})]


def _add_rule(ctx: SbpCtx) -> list[Signature]:
    """P -> P. A mirrored add (a DistributeClone's gradient) sums each device's own gradient whatever it lies as:
    per-device pieces (S, each of the whole blob's shape: a mirrored op run per device) are summed into P too, as
    OneFlow's DistributeAdd sums its sub-blobs; a B one (every device computed the same) stays B."""
    lying = ctx.producer_sbp.get(ctx.bns("in")[0]) if ctx.attrs["mirrored"] else None
    return [ctx.make({"in": lying if lying is not None and lying.is_split else PARTIAL_SUM, "out": PARTIAL_SUM})]


def add_distribute_op(op_type: str, xs: list[Any], attrs: dict[str, Any], name: str) -> list[Any]:
    from ..frontend.builder import add_op, current_builder

    attrs = {k: v for k, v in attrs.items() if k != "is_variable_ref"}  # a gradient is no variable's memory
    outs = add_op(op_type, {"in": xs}, attrs, name=name, scoped=False)
    if not attrs.get("mirrored"):
        fix_signature(current_builder(), name)
    return outs


def fix_signature(builder: Any, op_name: str) -> None:
    """Hints on every blob of a distribute op: its signature is OneFlow's, not a choice."""
    op = next(o for o in reversed(builder.ops) if o.name == op_name)
    sig = SIGNATURES[op.op_type](op.attrs, builder.blob_descs[op.output_lbns[0]])
    for bn, _lbn in input_bns(op.inputs, True):
        builder.set_sbp_hint(op_name, bn, sig["in"])
    for bn, _lbn in output_bns(op.outputs):
        builder.set_sbp_hint(op_name, bn, sig["out"])


SIGNATURES = {  # op type -> (attrs, an output's desc) -> the SBP of every input and every output
    "distribute_split": lambda attrs, d: {"in": split(attrs["axis"] % len(d.shape)), "out": BROADCAST},
    "distribute_clone": lambda attrs, d: {"in": BROADCAST, "out": BROADCAST},
    "distribute_concat": lambda attrs, d: {"in": BROADCAST, "out": split(attrs["axis"] % len(d.shape))},
    "distribute_add": lambda attrs, d: {"in": PARTIAL_SUM, "out": PARTIAL_SUM},
}


def joined_axis(op: OpConf, piece: BlobDesc) -> int | None:
    """The axis a mirrored concat (a DistributeSplit's gradient, OneFlow's DistributeConcat of the sub-blobs) joins
    its input pieces on, whatever they lie as (a gradient lying P is still that device's own rows); None for any
    other op, whose mirrored input pieces lie side by side only where they are split."""
    if op.op_type == "distribute_concat" and op.attrs.get("mirrored") and piece.shape:
        return op.attrs["axis"] % len(piece.shape)
    return None


def _dys(ctx: Any) -> list[Any] | None:
    """Every output's gradient (OneFlow checks all or none have one); a missing one is zeros."""
    from .array_ops import zeros_like

    dys = [ctx.dy("out", i) for i in range(len(ctx.op.outputs["out"]))]
    if all(dy is None for dy in dys):
        return None
    return [dy if dy is not None else zeros_like(ctx.y("out", i)) for i, dy in enumerate(dys)]


def _grad_split(ctx: Any) -> None:
    dys = _dys(ctx)
    if dys is not None:
        ctx.set_dx("in", add_distribute_op("distribute_concat", dys, dict(ctx.attrs), f"{ctx.op.name}_grad")[0])


def _grad_concat(ctx: Any) -> None:
    dy = ctx.dy("out")
    if dy is not None:
        dxs = add_distribute_op("distribute_split", [dy], dict(ctx.attrs), f"{ctx.op.name}_grad")
        for i, dx in enumerate(dxs):
            ctx.set_dx("in", dx, i)


def _grad_clone(ctx: Any) -> None:
    dys = _dys(ctx)
    if dys is not None:
        ctx.set_dx("in", add_distribute_op("distribute_add", dys, dict(ctx.attrs), f"{ctx.op.name}_grad")[0])


def _grad_add(ctx: Any) -> None:
    dy = ctx.dy("out")
    if dy is not None:
        for i, dx in enumerate(add_distribute_op("distribute_clone", [dy], dict(ctx.attrs), f"{ctx.op.name}_grad")):
            ctx.set_dx("in", dx, i)


register_op(OpDef("distribute_split", ("in",), ("out",), _infer_split, dict(_ATTRS), system=True,
                  grad=_grad_split, sbp=_split_rule))
register_op(OpDef("distribute_concat", ("in",), ("out",), _infer_concat, dict(_ATTRS), system=True,
                  grad=_grad_concat, sbp=_concat_rule))
register_op(OpDef("distribute_clone", ("in",), ("out",), _infer_clone, dict(_ATTRS), system=True,
                  grad=_grad_clone, sbp=lambda ctx: [ctx.make({"in": BROADCAST, "out": BROADCAST})]))
register_op(OpDef("distribute_add", ("in",), ("out",), _infer_add, dict(_ATTRS), system=True,
                  grad=_grad_add, sbp=_add_rule))
