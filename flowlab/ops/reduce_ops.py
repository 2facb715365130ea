"""Reductions: reduce_sum, reduce_mean, reduce_max, argmax, and the broadcast ops their gradients use."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.dtype import int32
from ._common import normalize_axes, require_blob
from .registry import ANY, ARITHMETIC, FLOATING, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import broadcast_like_rule, elementwise, reduce_max_grad_rule, reduce_rule


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    return kept or (1,)  # a full reduction is a 1-element blob, as in OneFlow v0.3


def _infer_reduce(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("input_tensor")
    axes = normalize_axes(ctx, ctx.attrs["axis"], len(x.shape))
    return {"output_tensor": [BlobDesc(reduced_shape(x.shape, axes, ctx.attrs["keepdims"]), x.dtype)]}


def _infer_broadcast_like(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"y": [BlobDesc(ctx.input("like").shape, ctx.input("x").dtype)]}


def _infer_argmax(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("in")
    return {"out": [BlobDesc(x.shape[:-1] or (1,), int32)]}


def _infer_reduce_max_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"dx": [ctx.input("x")]}


def _broadcast_back(dy: LazyBlob, like: LazyBlob, axes: tuple[int, ...]) -> LazyBlob:
    """Broadcast a reduction's gradient over the reduced ``axes`` of ``like``."""
    return add_op("broadcast_like", {"x": [dy], "like": [like]}, {"broadcast_axes": axes})[0]


def _grad_reduce(ctx: Any) -> None:
    x, dy = ctx.x("input_tensor"), ctx.dy("output_tensor")
    kind = ctx.op.op_type
    if kind == "reduce_max":
        dx = add_op("reduce_max_grad", {"x": [x], "y": [ctx.y("output_tensor")], "dy": [dy]},
                    {"axis": ctx.attrs["axis"], "keepdims": ctx.attrs["keepdims"]})[0]
    else:
        axis = ctx.attrs["axis"]
        rank = len(x.shape)
        axes = tuple(range(rank)) if axis is None else tuple(
            sorted(a % rank for a in ((axis,) if isinstance(axis, int) else axis)))
        dx = _broadcast_back(dy, x, axes)
        if kind == "reduce_mean":
            count = math.prod(x.shape) // math.prod(ctx.y("output_tensor").shape)
            dx = add_op("scalar_mul", {"x": [dx]}, {"operand": 1.0 / count})[0]
    ctx.set_dx("input_tensor", dx)


def _grad_broadcast_like(ctx: Any) -> None:
    ctx.set_dx("x", add_op("reduce_sum_like", {"x": [ctx.dy("y")], "like": [ctx.x("x")]})[0])


_REDUCE_ATTRS = {"axis": None, "keepdims": False}
for _t in ("reduce_sum", "reduce_mean", "reduce_max"):
    register_op(OpDef(_t, ("input_tensor",), ("output_tensor",), _infer_reduce, dict(_REDUCE_ATTRS), grad=_grad_reduce,
                      sbp=reduce_rule(sum_like=_t == "reduce_sum"),
                      dtypes={"input_tensor": FLOATING if _t == "reduce_mean" else ARITHMETIC}))
register_op(OpDef("broadcast_like", ("x", "like"), ("y",), _infer_broadcast_like, {"broadcast_axes": None},
                  grad=_grad_broadcast_like, dtypes={"x": ARITHMETIC, "like": ANY}, sbp=broadcast_like_rule))
register_op(OpDef("reduce_max_grad", ("x", "y", "dy"), ("dx",), _infer_reduce_max_grad,
                  {"axis": REQUIRED, "keepdims": REQUIRED}, dtypes=dtypes_of(("x", "y", "dy"), FLOATING),
                  sbp=reduce_max_grad_rule))
register_op(OpDef("argmax", ("in",), ("out",), _infer_argmax, dtypes={"in": ARITHMETIC},
                  sbp=elementwise("in", keep_last=False)))


def _reduce(kind: str, x: LazyBlob, axis: int | Sequence[int] | None, keepdims: bool, name: str | None) -> LazyBlob:
    require_blob(x, f"the input of {kind}")
    attrs = {"axis": None if axis is None else (axis if isinstance(axis, int) else tuple(axis)),
             "keepdims": bool(keepdims)}
    return add_op(kind, {"input_tensor": [x]}, attrs, name)[0]


def reduce_sum(input_tensor: LazyBlob, axis: int | Sequence[int] | None = None, keepdims: bool = False,
               name: str | None = None) -> LazyBlob:
    return _reduce("reduce_sum", input_tensor, axis, keepdims, name)


def reduce_mean(input_tensor: LazyBlob, axis: int | Sequence[int] | None = None, keepdims: bool = False,
                name: str | None = None) -> LazyBlob:
    return _reduce("reduce_mean", input_tensor, axis, keepdims, name)


def reduce_max(input_tensor: LazyBlob, axis: int | Sequence[int] | None = None, keepdims: bool = False,
               name: str | None = None) -> LazyBlob:
    return _reduce("reduce_max", input_tensor, axis, keepdims, name)


def argmax(input: LazyBlob, axis: int = -1, name: str | None = None) -> LazyBlob:
    """Index (int32) of the largest value along ``axis``; the first one on ties. The argmax op works on the last
    axis; another axis is first transposed last, as OneFlow's ``flow.math.argmax`` does. The result has the
    input's shape without ``axis`` ((1,) for a 1-D input)."""
    from .array_ops import transpose

    require_blob(input, "argmax's input")
    rank = len(input.shape)
    axis = rank - 1 if axis is None else axis
    if not isinstance(axis, int) or not -rank <= axis < rank:
        raise ValueError(f"argmax: axis {axis!r} is out of range for {input.blob_desc} (rank {rank})")
    axis %= rank
    if axis != rank - 1:
        input = transpose(input, [*(i for i in range(rank) if i != axis), axis])
    return add_op("argmax", {"in": [input]}, name=name)[0]
