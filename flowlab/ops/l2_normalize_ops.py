"""OneFlow v0.3.4's ``flow.math.l2_normalize`` (``math_ops.py``) and its ``l2_normalize`` op
(``user/ops/l2_normalize_op.cpp``, ``user/kernels/l2_normalize_kernel.cpp``): y = x / sqrt(max(sum(x^2), eps))
along ``axis``, with the sums as a second output (``square_x_sum``, the axis kept as 1) that the gradient op
``l2_normalize_grad`` reads: dx = (dy - y sum(dy y)) / norm where sum(x^2) >= eps, dy / norm elsewhere. SBP:
every blob split on the same axis, any axis but ``axis``."""

from __future__ import annotations

from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.sbp import split
from ._common import require_blob
from .registry import FLOATING, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import SbpCtx, Signature


def _check(ctx: InferCtx, shape: tuple[int, ...]) -> None:
    if not -len(shape) <= ctx.attrs["axis"] < len(shape):  # negative counts from the end, as flowlab's axis attrs
        raise ctx.fail(f"axis {ctx.attrs['axis']} is out of range for a rank-{len(shape)} blob")
    if not ctx.attrs["epsilon"] > 0:
        raise ctx.fail(f"epsilon must be > 0; got {ctx.attrs['epsilon']}")


def _infer(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    _check(ctx, x.shape)
    axis = ctx.attrs["axis"] % len(x.shape)
    sums = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    return {"y": [x], "square_x_sum": [BlobDesc(sums, x.dtype)]}


def _infer_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    dy, y = ctx.input("dy"), ctx.input("y")
    _check(ctx, y.shape)
    if dy != y:
        raise ctx.fail(f"dy {dy} must have the shape and dtype of y {y}")
    return {"dx": [dy]}


def _grad(ctx: Any) -> None:
    ins = {"dy": [ctx.dy("y")], "y": [ctx.y("y")], "square_x_sum": [ctx.y("square_x_sum")]}
    ctx.set_dx("x", add_op("l2_normalize_grad", ins, dict(ctx.attrs))[0])


def _rule(ctx: SbpCtx) -> list[Signature]:
    ref = "x" if ctx.bns("x") else "y"
    rank = ctx.ndim(ref)
    return [ctx.make({arg: split(i) for arg in ctx.arg_bns}) for i in range(rank) if i != ctx.attrs["axis"] % rank]


_ATTRS = {"axis": REQUIRED, "epsilon": 1e-12}
register_op(OpDef("l2_normalize", ("x",), ("y", "square_x_sum"), _infer, dict(_ATTRS), grad=_grad,
                  dtypes={"x": FLOATING}, sbp=_rule))
register_op(OpDef("l2_normalize_grad", ("dy", "y", "square_x_sum"), ("dx",), _infer_grad, dict(_ATTRS),
                  dtypes=dtypes_of(("dy", "y", "square_x_sum"), FLOATING), sbp=_rule))


def l2_normalize(input: LazyBlob, axis: int | None = None, epsilon: float = 1e-12,
                 name: str | None = None) -> LazyBlob:
    """x / sqrt(max(sum(x^2 along axis), epsilon)). OneFlow's function needs an axis (None fails there too)."""
    require_blob(input, "l2_normalize's input")
    rank = len(input.shape)
    if not isinstance(axis, int) or not -rank <= axis < rank:
        raise ValueError(f"l2_normalize: axis must be an int in [-{rank}, {rank}) for {input.blob_desc}; got "
                         f"{axis!r}")
    y, _sums = add_op("l2_normalize", {"x": [input]}, {"axis": axis % rank, "epsilon": float(epsilon)}, name)
    return y


__all__ = ["l2_normalize"]
