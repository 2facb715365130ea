"""OneFlow v0.3.4's sorting ops (sort_ops.py, math_ops.py's top_k; user ops sort, arg_sort, top_k): each on the
last axis, another axis transposed last and back as OneFlow's python does. Ties keep the lower index first
(OneFlow's comparators). No gradient (OneFlow registers none)."""

from __future__ import annotations

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.dtype import int8, int32
from ._common import require_blob
from .registry import ARITHMETIC, FLOATING, INDEX, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import elementwise

DIRECTIONS = ("ASCENDING", "DESCENDING")


def _infer_sort(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("in")
    if ctx.attrs["direction"] not in DIRECTIONS:
        raise ctx.fail(f"direction must be one of {DIRECTIONS}; got {ctx.attrs['direction']!r}")
    return {"out": [x if ctx.op_type == "sort" else BlobDesc(x.shape, int32)]}


def _infer_top_k(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, k = ctx.input("in"), ctx.attrs["k"]
    if not isinstance(k, int) or k < 1:
        raise ctx.fail(f"k must be a positive int; got {k!r}")
    return {"out": [BlobDesc(x.shape[:-1] + (min(k, x.shape[-1]),), int32)]}


for _t in ("sort", "arg_sort"):
    register_op(OpDef(_t, ("in",), ("out",), _infer_sort, {"direction": "ASCENDING"}, dtypes={"in": ARITHMETIC},
                      sbp=elementwise("in", keep_last=False)))
register_op(OpDef("top_k", ("in",), ("out",), _infer_top_k, {"k": 1, "sorted": True}, dtypes={"in": ARITHMETIC},
                  sbp=elementwise("in", keep_last=False)))


def _at_last_axis(x: LazyBlob, axis: int, build) -> LazyBlob:
    from .array_ops import transpose

    rank = len(x.shape)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for {x.blob_desc}")
    if axis == rank - 1:
        return build(x)
    perm = [*(i for i in range(rank) if i != axis), axis]
    inverse = [perm.index(i) for i in range(rank)]
    return transpose(build(transpose(x, perm)), inverse)


def _direction(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}; got {direction!r}")
    return direction


def sort(input: LazyBlob, axis: int = -1, direction: str = "ASCENDING", name: str | None = None) -> LazyBlob:
    """The values sorted along ``axis``."""
    attrs = {"direction": _direction(direction)}
    return _at_last_axis(require_blob(input, "input of sort"), axis,
                         lambda x: add_op("sort", {"in": [x]}, attrs, name=name)[0])


def argsort(input: LazyBlob, axis: int = -1, direction: str = "ASCENDING", name: str | None = None) -> LazyBlob:
    """The int32 indices that sort ``input`` along ``axis`` (equal values keep their order)."""
    attrs = {"direction": _direction(direction)}
    return _at_last_axis(require_blob(input, "input of argsort"), axis,
                         lambda x: add_op("arg_sort", {"in": [x]}, attrs, name=name)[0])


def top_k(input: LazyBlob, axis: int = -1, k: int = 1, sorted: bool = True, name: str | None = None) -> LazyBlob:
    """The int32 indices of the k largest values along ``axis`` (k above the axis' length gives all of them);
    flowlab always returns them largest first (``sorted=False`` leaves the order to the kernel in OneFlow)."""
    attrs = {"k": int(k), "sorted": bool(sorted)}
    return _at_last_axis(require_blob(input, "input of top_k"), axis,
                         lambda x: add_op("top_k", {"in": [x]}, attrs, name=name)[0])


def _infer_in_top_k(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    targets, predictions = ctx.input("targets"), ctx.input("predictions")
    if targets.is_dynamic != predictions.is_dynamic:  # OneFlow's in_top_k_op.cpp
        raise ctx.fail("in_top_k takes targets and predictions both dynamic (tp.ListNumpy) or both static")
    # dynamic blobs' static shapes are upper bounds, each its own: their current batch sizes are compared per act
    if len(targets.shape) != 1 or len(predictions.shape) != 2 or (
            targets.shape[0] != predictions.shape[0] and not targets.is_dynamic):
        raise ctx.fail(f"in_top_k takes targets (n,) and predictions (n, classes); got {targets} and {predictions}")
    return {"out": [BlobDesc(targets.shape, int8)]}


register_op(OpDef("in_top_k", ("targets", "predictions"), ("out",), _infer_in_top_k, {"k": REQUIRED},
                  # OneFlow takes float32 predictions only; float64 costs nothing here
                  dtypes={"targets": INDEX, "predictions": FLOATING}, sbp=elementwise("targets")))


def in_top_k(targets: LazyBlob, predictions: LazyBlob, k: int | None, name: str | None = None) -> LazyBlob:
    """int8, 1 where the target class's prediction has fewer than k classes above it (ties count in); 0 where a
    prediction in the row is not finite or the target is out of range, as OneFlow's kernel."""
    if not isinstance(k, int):
        raise TypeError(f"in_top_k's k must be an int; got {k!r}")
    return add_op("in_top_k", {"targets": [require_blob(targets, "targets of in_top_k")],
                               "predictions": [require_blob(predictions, "predictions of in_top_k")]},
                  {"k": k}, name=name)[0]
