"""Gather and slice: OneFlow v0.3.4's ``flow.gather`` (its gather op and, for the gradient,
``unsorted_segment_sum_like``), ``flow.slice`` and ``flow.slice_v2`` (the slice op and its ``slice_grad``)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ._common import require_blob
from .registry import ANY, ARITHMETIC, INDEX, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import gather_rule, segment_sum_rule, slice_rule


def _infer_gather(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    params, indices = ctx.input("in"), ctx.input("indices")
    axis = ctx.attrs["axis"]
    if not -len(params.shape) <= axis < len(params.shape):
        raise ctx.fail(f"axis {axis} is out of range for {params}")
    axis %= len(params.shape)
    return {"out": [BlobDesc(params.shape[:axis] + indices.shape + params.shape[axis + 1:], params.dtype)]}


def _grad_segment_sum(ctx: Any) -> None:
    """OneFlow's unsorted_segment_sum(_like) gradient: gather dy's rows back by the segment ids (like gets none)."""
    size = ctx.dy("out").shape[ctx.attrs["axis"]]
    ctx.set_dx("data", add_op("gather", {"in": [ctx.dy("out")], "indices": [ctx.x("segment_ids")]},
                              {"axis": ctx.attrs["axis"], "logical_axis_size": size})[0])


def _grad_gather(ctx: Any) -> None:
    dx = add_op("unsorted_segment_sum_like", {"data": [ctx.dy("out")], "segment_ids": [ctx.x("indices")],
                                              "like": [ctx.x("in")]}, {"axis": ctx.attrs["axis"]})[0]
    ctx.set_dx("in", dx)


def _infer_segment_sum(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [BlobDesc(ctx.input("like").shape, ctx.input("data").dtype)]}


def _slice_bounds(shape: tuple[int, ...], spec: Sequence[Sequence[int | None]]) -> list[tuple[int, int, int]]:
    return [builtins.slice(*s).indices(d) for s, d in zip(spec, shape)]  # this module's slice() shadows it


def _infer_slice(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    spec = ctx.attrs["slice_tup_list"]
    if len(spec) != len(x.shape):
        raise ctx.fail(f"slice_tup_list needs one (start, stop, step) per axis of {x}; got {len(spec)}")
    if any(s[2] == 0 for s in spec):  # a negative step slices backwards (OneFlow's slice_v2 too), as in Python
        raise ctx.fail(f"slice steps must not be 0; got {list(spec)} for {x}")
    shape = [len(range(start, stop, step)) for start, stop, step in _slice_bounds(x.shape, spec)]
    if 0 in shape:
        raise ctx.fail(f"slice {list(spec)} of {x} is empty")
    return {"y": [BlobDesc(tuple(shape), x.dtype)]}


def _grad_slice(ctx: Any) -> None:
    dx = add_op("slice_grad", {"dy": [ctx.dy("y")], "like": [ctx.x("x")]},
                {"slice_tup_list": ctx.attrs["slice_tup_list"]})[0]
    ctx.set_dx("x", dx)


def _infer_slice_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"dx": [BlobDesc(ctx.input("like").shape, ctx.input("dy").dtype)]}


for _op in (
    # logical_axis_size: ``in``'s logical length on the gather axis, so a device holding a slice of it (the
    # S(axis) -> P signature) finds its rows' offset, as OneFlow's kernel does from the logical blob desc
    OpDef("gather", ("in", "indices"), ("out",), _infer_gather, {"axis": 0, "logical_axis_size": None},
          grad=_grad_gather,
          dtypes={"in": ANY, "indices": INDEX}, sbp=gather_rule),
    # logical_axis_size: like's logical length on the summed axis (flow.math.unsorted_segment_sum_like sets it),
    # which offers OneFlow's model-parallel signature (like S(axis)) and gives a device its segments' offset
    OpDef("unsorted_segment_sum_like", ("data", "segment_ids", "like"), ("out",), _infer_segment_sum,
          {"axis": 0, "logical_axis_size": None},
          grad=_grad_segment_sum, dtypes={"data": ARITHMETIC, "segment_ids": INDEX, "like": ANY}, sbp=segment_sum_rule),
    OpDef("slice", ("x",), ("y",), _infer_slice, {"slice_tup_list": REQUIRED}, grad=_grad_slice,
          dtypes={"x": ANY}, sbp=slice_rule("x")),  # a copy: any dtype
    OpDef("slice_grad", ("dy", "like"), ("dx",), _infer_slice_grad, {"slice_tup_list": REQUIRED},
          dtypes={"dy": ARITHMETIC, "like": ANY}, sbp=slice_rule("like")),
):
    register_op(_op)


def gather(params: LazyBlob, indices: LazyBlob, validate_indices: Any = None, axis: int | None = None,
           batch_dims: int = 0, name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.gather``: ``axis`` None means ``batch_dims``; ``batch_dims > 0`` is its batch_gather."""
    require_blob(params, "gather's params")
    require_blob(indices, "gather's indices")
    if batch_dims:
        from .index_ops import batch_gather

        return batch_gather(params, indices, axis, int(batch_dims), name)
    axis = int(axis or 0)
    size = params.shape[axis] if -len(params.shape) <= axis < len(params.shape) else None  # inference says why
    return add_op("gather", {"in": [params], "indices": [indices]}, {"axis": axis, "logical_axis_size": size},
                  name)[0]


def slice(x: LazyBlob, begin: Sequence[int | None], size: Sequence[int | None], name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.slice(x, begin, size)``: per axis, ``size`` elements from ``begin`` (None: all)."""
    require_blob(x, "slice's input")
    if len(begin) != len(x.shape) or len(size) != len(x.shape):
        raise ValueError(f"slice: begin and size need one entry per axis of {x.blob_desc}; got {begin}, {size}")
    spec = []
    for b, s, d in zip(begin, size, x.shape):
        start = 0 if b is None else b
        stop = d if s is None or s == -1 else start + s
        spec.append((start, stop, 1))
    return slice_v2(x, spec, name=name)


def slice_v2(x: LazyBlob, slice_tup_list: Sequence[Sequence[int | None]], name: str | None = None) -> LazyBlob:
    """Per axis (start, stop, step), Python-slice semantics. A list shorter than the rank leaves the remaining
    axes whole (OneFlow's ``_check_slice_tup_list`` fills them with (None, None, None))."""
    require_blob(x, "slice's input")
    if not isinstance(slice_tup_list, (list, tuple)) or len(slice_tup_list) > len(x.shape):
        raise ValueError(f"slice_v2: slice_tup_list must be a list of at most {len(x.shape)} (start, stop, step) "
                         f"(one per axis of {x.blob_desc}); got {slice_tup_list!r}")
    spec = tuple(tuple(s) for s in slice_tup_list)
    spec += ((None, None, None),) * (len(x.shape) - len(spec))
    return add_op("slice", {"x": [x]}, {"slice_tup_list": spec}, name)[0]


__all__ = ["gather", "slice", "slice_v2"]
