"""Reductions: reduce_sum, reduce_mean, reduce_max, argmax, and the broadcast ops their gradients use; OneFlow
v0.3.4's other reductions (reduce_ops.cpp: reduce_min, reduce_prod, reduce_all, reduce_any; the python functions of
reduce_ops.py, which build reduce_euclidean_norm, reduce_logsumexp and reduce_std from other ops), count_not_finite,
and polyval as OneFlow's python builds it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.dtype import int32, int64
from ..ir.sbp import PARTIAL_SUM, split
from ._common import normalize_axes, require_blob
from .registry import ANY, ARITHMETIC, FLOATING, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import SbpCtx, Signature, broadcast_like_rule, elementwise, reduce_max_grad_rule, reduce_rule


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


NEW = ("reduce_min", "reduce_prod", "reduce_all", "reduce_any")


def _grad_reduce_min(ctx: Any) -> None:
    """OneFlow's GenerateBackwardOpConf4ReduceMaxMin: dy shared by the elements equal to the result, which the
    reduce_max_grad op computes for a minimum as well (its mask is x == y)."""
    x, dy = ctx.x("input_tensor"), ctx.dy("output_tensor")
    ctx.set_dx("input_tensor", add_op("reduce_max_grad", {"x": [x], "y": [ctx.y("output_tensor")], "dy": [dy]},
                                      {"axis": ctx.attrs["axis"], "keepdims": ctx.attrs["keepdims"]})[0])


for _t in NEW:
    register_op(OpDef(_t, ("input_tensor",), ("output_tensor",), _infer_reduce, {"axis": None, "keepdims": False},
                      grad=_grad_reduce_min if _t == "reduce_min" else None, sbp=reduce_rule(sum_like=False),
                      dtypes={"input_tensor": ARITHMETIC}))


Axis = int | Sequence[int] | None


def _empty(axis: Axis) -> bool:
    return isinstance(axis, (list, tuple)) and len(axis) == 0


def reduce_min(x: LazyBlob, axis: Axis = None, keepdims: bool = False, name: str | None = None) -> LazyBlob:
    """The minimum over ``axis`` (all axes when None; an empty list gives x, as OneFlow)."""
    return x if _empty(axis) else _reduce("reduce_min", x, axis, keepdims, name)


def reduce_prod(x: LazyBlob, axis: Axis = None, keepdims: bool = False, name: str | None = None) -> LazyBlob:
    """The product over ``axis`` (no gradient: OneFlow registers none)."""
    return x if _empty(axis) else _reduce("reduce_prod", x, axis, keepdims, name)


def _logical(kind: str, x: LazyBlob, axis: Axis, keepdims: bool, name: str | None) -> LazyBlob:
    from .compare_ops import not_equal

    if _empty(axis):  # OneFlow: x != 0
        return not_equal(x, 0)
    return _reduce(kind, x, axis, keepdims, name)


def reduce_all(x: LazyBlob, axis: Axis = None, keepdims: bool = False, name: str | None = None) -> LazyBlob:
    """1 where every element over ``axis`` is nonzero, else 0, in x's dtype."""
    return _logical("reduce_all", x, axis, keepdims, name)


def reduce_any(x: LazyBlob, axis: Axis = None, keepdims: bool = False, name: str | None = None) -> LazyBlob:
    """1 where some element over ``axis`` is nonzero, else 0, in x's dtype."""
    return _logical("reduce_any", x, axis, keepdims, name)


def reduce_euclidean_norm(input_tensor: LazyBlob, axis: Axis = None, keepdims: bool = False,
                          name: str | None = None) -> LazyBlob:
    """sqrt(reduce_sum(square(x))), as OneFlow builds it."""
    from .math_ops import sqrt, square
    from .reduce_ops import reduce_sum

    return sqrt(reduce_sum(square(require_blob(input_tensor, "input_tensor")), axis, keepdims), name)


def reduce_logsumexp(input_tensor: LazyBlob, axis: Axis = None, keepdims: bool = False,
                     name: str | None = None) -> LazyBlob:
    """log(reduce_sum(exp(x))): OneFlow's formula as written (no max shift: large inputs overflow there too)."""
    from .math_ops import exp, log
    from .reduce_ops import reduce_sum

    return log(reduce_sum(exp(require_blob(input_tensor, "input_tensor")), axis, keepdims), name)


# -- count_not_finite, polyval --------------------------------------------------------------------------------
def _infer_count(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    xs = ctx.inputs["x"]
    if len({d.dtype for d in xs}) > 1:
        raise ctx.fail(f"every x must have one dtype; got {', '.join(str(d) for d in xs)}")
    return {"y": [BlobDesc((1,), int64)]}


def _count_sbp(ctx: SbpCtx) -> list[Signature]:
    """count_not_finite_op.cpp: the inputs split on one axis (each axis all of them have) -> y P."""
    axes = min(len(ctx.descs[bn].shape) for bn in ctx.bns("x"))
    return [ctx.make({"x": split(a), "y": PARTIAL_SUM}) for a in range(axes)]


for _t in ("count_not_finite", "multi_count_not_finite"):
    register_op(OpDef(_t, ("x",), ("y",), _infer_count, dtypes={"x": FLOATING}, sbp=_count_sbp))


def count_not_finite(x: LazyBlob, name: str | None = None) -> LazyBlob:
    """How many elements of x are NaN or ±inf: an int64 blob of shape (1,)."""
    return add_op("count_not_finite", {"x": [require_blob(x, "x of count_not_finite")]}, name=name)[0]


def multi_count_not_finite(x: Sequence[LazyBlob] | None = None, name: str | None = None) -> LazyBlob:
    """count_not_finite summed over the blobs of ``x`` (at least one, one dtype)."""
    blobs = [require_blob(b, "each x of multi_count_not_finite") for b in (x or ())]
    if not blobs:
        raise ValueError("multi_count_not_finite needs at least one blob")
    return add_op("multi_count_not_finite", {"x": blobs}, name=name)[0]


def polyval(coeffs: list | tuple, x: LazyBlob, name: str | None = None) -> LazyBlob:
    """coeffs[0]·x^(n-1) + ... + coeffs[-1] by Horner's rule, built as OneFlow builds it (zeros_like, then
    add(c, multiply(p, x)) per coefficient)."""
    from .array_ops import zeros_like
    from .math_ops import add, multiply

    if not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"Argument coeffs must be list type found {type(coeffs)}")
    p = zeros_like(require_blob(x, "x of polyval"), name=name)
    for c in coeffs:
        p = add(c, multiply(p, x))
    return p
