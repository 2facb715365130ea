"""Creation and layout ops of OneFlow v0.3.4 that flowlab lacked: flow.zeros / ones (constants, as OneFlow builds
them), flow.range (range_op.cpp), flow.stack (expand_dims + concat, as OneFlow), flow.reverse, flow.broadcast_like
(the op exists; its user function), flow.math.tril and fused_scale_tril (tril_op.cpp)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.dtype import as_dtype
from ..ir.sbp import split
from ._common import is_number, require_blob
from .registry import ANY, ARITHMETIC, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import SbpCtx, Signature, broadcast_only


def _infer_range(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    start, limit, delta = (ctx.attrs[k] for k in ("start", "limit", "delta"))
    if delta <= 0 or limit <= start:
        raise ctx.fail(f"range needs start < limit and delta > 0; got start={start}, limit={limit}, delta={delta}")
    return {"out": [BlobDesc(((limit - start + delta - 1) // delta,), as_dtype(ctx.attrs["dtype"]))]}


def _infer_same(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [ctx.input("in")]}


def _infer_tril(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("in")
    if len(x.shape) < 2:
        raise ctx.fail(f"tril needs a blob of 2 or more axes; got {x}")
    return {"out": [x]}


def _off_axes(kind: str):
    """Split on every axis the op does not read across: not the reversed ones (reverse), not the last two (tril)."""

    def rule(ctx: SbpCtx) -> list[Signature]:
        nd = ctx.ndim("in")
        fixed = set(ctx.attrs["axis"]) if kind == "reverse" else {nd - 2, nd - 1}
        return [ctx.make({"in": split(a), "out": split(a)}) for a in range(nd) if a not in fixed]

    return rule


def _grad_reverse(ctx: Any) -> None:
    ctx.set_dx("in", add_op("reverse", {"in": [ctx.dy("out")]}, {"axis": ctx.attrs["axis"]})[0])


def _grad_tril(ctx: Any) -> None:
    attrs = {**ctx.attrs, "is_floating_fill_value": False, "floating_fill_value": 0.0, "integer_fill_value": 0}
    ctx.set_dx("in", add_op(ctx.op.op_type, {"in": [ctx.dy("out")]}, attrs)[0])


_TRIL = {"diagonal": 0, "is_floating_fill_value": False, "floating_fill_value": 0.0, "integer_fill_value": 0}
register_op(OpDef("range", (), ("out",), _infer_range,
                  {"start": REQUIRED, "limit": REQUIRED, "delta": REQUIRED, "dtype": REQUIRED}, sbp=broadcast_only))
register_op(OpDef("reverse", ("in",), ("out",), _infer_same, {"axis": REQUIRED}, grad=_grad_reverse,
                  dtypes={"in": ANY}, sbp=_off_axes("reverse")))
register_op(OpDef("tril", ("in",), ("out",), _infer_tril, dict(_TRIL), grad=_grad_tril, dtypes={"in": ARITHMETIC},
                  sbp=_off_axes("tril")))
register_op(OpDef("fused_scale_tril", ("in",), ("out",), _infer_tril,
                  {**_TRIL, "is_floating_scale_value": False, "floating_scale_value": 1.0, "integer_scale_value": 1},
                  grad=_grad_tril, dtypes={"in": ARITHMETIC}, sbp=_off_axes("tril")))


# -- user-facing functions -------------------------------------------------------------------------------------
def zeros(shape: Sequence[int], dtype: Any = None, name: str | None = None) -> LazyBlob:
    """A constant 0 of ``shape`` (dtype default float32), as OneFlow builds it."""
    from .array_ops import constant

    return constant(0.0, dtype or "float32", shape, name=name)


def ones(shape: Sequence[int], dtype: Any = None, name: str | None = None) -> LazyBlob:
    """A constant 1 of ``shape`` (dtype default float32), as OneFlow builds it."""
    from .array_ops import constant

    return constant(1.0, dtype or "float32", shape, name=name)


def range_(start: int, limit: int | None = None, delta: int = 1, dtype: Any = None,
           name: str = "range") -> LazyBlob:
    """``flow.range``: [start, limit) in steps of delta (ints, as OneFlow asserts); ``range(n)`` is [0, n); dtype is
    required. (Named ``range_`` here so that this module keeps Python's ``range``.)"""
    if dtype is None:
        raise ValueError("Please specified data type")  # OneFlow's assertion, worded as OneFlow
    if limit is None:
        start, limit = 0, start
    for what, v in (("start", start), ("limit", limit), ("delta", delta)):
        if type(v) is not int:
            raise TypeError(f"Params `{what}`'s type should be int; got {v!r}")
    return add_op("range", attrs={"start": start, "limit": limit, "delta": delta, "dtype": as_dtype(dtype)},
                  name=name if name != "range" else None)[0]


def stack(inputs: Sequence[LazyBlob], axis: int = 0, name: str | None = None) -> LazyBlob:
    """The blobs (one shape) stacked along a new ``axis``: expand_dims each, then concat, as OneFlow."""
    from .array_ops import concat, expand_dims

    inputs = [require_blob(b, "each input of stack") for b in inputs]
    if not inputs:
        raise ValueError("stack needs at least one blob")
    shape = inputs[0].shape
    axis = axis + len(shape) + 1 if axis < 0 else axis
    if not 0 <= axis <= len(shape):
        raise ValueError(f"stack: axis {axis} is out of range for blobs of rank {len(shape)}")
    for b in inputs:
        if b.shape != shape:
            raise ValueError(f"Each tensor should have the same shape ! Found a tensor instance shape is: {b.shape}")
    return concat([expand_dims(b, axis) for b in inputs], axis=axis, name=name)


def reverse(input: LazyBlob, axis: int | Sequence[int], name: str | None = None) -> LazyBlob:
    """``input`` reversed along ``axis`` (an int or a list). OneFlow builds it as slice_v2 with step -1; flowlab's
    slice takes positive steps only, so it is one op here (same values, gradient: reverse)."""
    x = require_blob(input, "input of reverse")
    if isinstance(axis, int):
        axis = [axis]
    if not isinstance(axis, (list, tuple)) or not all(isinstance(a, int) for a in axis):
        raise ValueError(f"The axis must be a int or a list/tuple of int; got {axis!r}")
    rank = len(x.shape)
    if not all(-rank <= a < rank for a in axis):
        raise ValueError(f"The axis {list(axis)} is out of range for {x.blob_desc}")
    return add_op("reverse", {"in": [x]}, {"axis": tuple(sorted({a % rank for a in axis}))}, name=name)[0]


def broadcast_like(x: LazyBlob, like: LazyBlob, broadcast_axes: Sequence[int] | None = None,
                   name: str | None = None) -> LazyBlob:
    """``x`` broadcast to ``like``'s shape along ``broadcast_axes`` (default: every axis of like)."""
    x, like = require_blob(x, "x of broadcast_like"), require_blob(like, "like of broadcast_like")
    axes = list(range(len(like.shape))) if broadcast_axes is None else list(broadcast_axes)
    if not 0 < len(axes) <= len(like.shape):
        raise ValueError("The length of broadcast_axes must be greater than 0 and less than or equal to number of "
                         "axes of like shape")
    return add_op("broadcast_like", {"x": [x], "like": [like]}, {"broadcast_axes": tuple(axes)}, name=name)[0]


def _fill_attrs(fill_value: float) -> dict[str, Any]:
    if not is_number(fill_value):
        raise TypeError(f"tril's fill_value must be a number; got {fill_value!r}")
    floating = isinstance(fill_value, float)
    return {"is_floating_fill_value": floating, "floating_fill_value": float(fill_value) if floating else 0.0,
            "integer_fill_value": 0 if floating else int(fill_value)}


def tril(x: LazyBlob, diagonal: int = 0, fill_value: float = 0, name: str | None = None) -> LazyBlob:
    """The lower triangle of the last two axes (j <= i + diagonal); the rest is ``fill_value``."""
    attrs = {"diagonal": int(diagonal), **_fill_attrs(fill_value)}
    return add_op("tril", {"in": [require_blob(x, "x of tril")]}, attrs, name=name)[0]


def fused_scale_tril(x: LazyBlob, diagonal: int = 0, fill_value: float = 0, scale: float = 1,
                     name: str | None = None) -> LazyBlob:
    """tril(x * scale, diagonal, fill_value) in one op."""
    if not is_number(scale):
        raise TypeError(f"fused_scale_tril's scale must be a number; got {scale!r}")
    floating = isinstance(scale, float)
    attrs = {"diagonal": int(diagonal), **_fill_attrs(fill_value), "is_floating_scale_value": floating,
             "floating_scale_value": float(scale) if floating else 1.0,
             "integer_scale_value": 1 if floating else int(scale)}
    return add_op("fused_scale_tril", {"in": [require_blob(x, "x of fused_scale_tril")]}, attrs, name=name)[0]

