"""OneFlow's DistributeSplit and DistributeConcat in flowlab's mirrored form (``core/operator/distribute_*_op.cpp``).

OneFlow converts a consistent S(0) blob that a mirrored op reads into per-device pieces with a DistributeSplit op
(``System-Mirrored-Blob-Auto-Converted-From-Consistent-Blob-DistributeSplit-<id>``, made by
FindOrCreateMirroredLbiFromCompatibleConsistentBlob), and the mirrored ops after it are inferred on one piece. Its
gradient is a DistributeConcat (``<split>_grad``, ``job_rewriter/distribute_grad.cpp``), which joins the devices'
pieces back into one consistent blob. flowlab writes a mirrored blob as one blob whose desc is one device's piece,
lying S(axis) over the placement, so both ops have one input and one output, and on every device each is a copy:
the split's input arrives as that device's S(axis) slice, which is its piece; the concat's piece is its slice of
the consistent output. Pieces are equal (the pass that inserts the split checks the rows divide evenly).
"""

from __future__ import annotations

from typing import Any

from ..ir import BlobDesc
from ..ir.sbp import split
from .registry import REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import SbpCtx, Signature

_ATTRS = {"axis": 0, "parallel_num": REQUIRED}


def _with_axis(desc: BlobDesc, axis: int, size: int) -> BlobDesc:
    shape = list(desc.shape)
    shape[axis] = size
    return BlobDesc(tuple(shape), desc.dtype, desc.is_dynamic)


def _axis(ctx: InferCtx) -> tuple[BlobDesc, int, int]:
    desc, axis, n = ctx.input("in"), ctx.attrs["axis"], ctx.attrs["parallel_num"]
    if not 0 <= axis < len(desc.shape):
        raise ctx.fail(f"axis {axis} is not an axis of the input of shape {tuple(desc.shape)}")
    return desc, axis, n


def _infer_split(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    desc, axis, n = _axis(ctx)
    if desc.shape[axis] % n:
        raise ctx.fail(f"the input of shape {tuple(desc.shape)} has {desc.shape[axis]} rows on axis {axis}, which do "
                       f"not divide evenly over {n} devices, so the devices' pieces would differ in shape")
    return {"out": [_with_axis(desc, axis, desc.shape[axis] // n)]}


def _infer_concat(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    desc, axis, n = _axis(ctx)
    return {"out": [_with_axis(desc, axis, desc.shape[axis] * n)]}


def _split_on_axis(ctx: SbpCtx) -> list[Signature]:
    """Input and output S(axis): each device's slice of the input is its piece (OneFlow: in S(axis); each
    output on its own device)."""
    return [ctx.make({"in": split(ctx.attrs["axis"]), "out": split(ctx.attrs["axis"])})]


def _grad_split(ctx: Any) -> None:  # autograd's GradCtx
    from ..frontend.builder import add_op

    dy = ctx.dy("out")
    if dy is not None:
        ctx.set_dx("in", add_op("distribute_concat", {"in": [dy]}, dict(ctx.attrs), name=f"{ctx.op.name}_grad",
                                scoped=False)[0])


def _grad_concat(ctx: Any) -> None:
    from ..frontend.builder import add_op

    dy = ctx.dy("out")
    if dy is not None:
        ctx.set_dx("in", add_op("distribute_split", {"in": [dy]}, dict(ctx.attrs), name=f"{ctx.op.name}_grad",
                                scoped=False)[0])


register_op(OpDef("distribute_split", ("in",), ("out",), _infer_split, dict(_ATTRS), system=True,
                  grad=_grad_split, sbp=_split_on_axis))
register_op(OpDef("distribute_concat", ("in",), ("out",), _infer_concat, dict(_ATTRS), system=True,
                  grad=_grad_concat, sbp=_split_on_axis))
