"""Segment sums as user functions: ``flow.math.unsorted_segment_sum`` (OneFlow's unsorted_segment_sum op, new
here), ``flow.math.unsorted_segment_sum_like`` and ``flow.math.unsorted_batch_segment_sum`` (ops flowlab already
had as gradients of gather and batch_gather).

Declared as ``oneflow/user/ops/unsorted_segment_sum_op.cpp`` declares it: the out shape is data's with the
segment ids' axes (starting at ``axis``) replaced by ``num_segments``; SBP: ids and data split together give a
partial sum, data split elsewhere (ids broadcast) splits the output alike, data P with ids B gives P; the gradient
is a gather of the output's gradient by the ids.
"""

from __future__ import annotations

from typing import Any

from ..errors import OpInferError
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..frontend.location import user_location
from ..ir import BlobDesc
from ..ir.sbp import BROADCAST, PARTIAL_SUM, split
from ._common import require_blob
from .registry import ARITHMETIC, INDEX, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import SbpCtx, Signature


def _where() -> str:
    loc = user_location()
    return f"{loc}: " if loc else ""


def _infer_segment_sum(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    data, ids = ctx.input("data"), ctx.input("segment_ids")
    axis, n = ctx.attrs["axis"], ctx.attrs["num_segments"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ctx.fail(f"num_segments must be a positive int; got {n!r}")
    out_nd = len(data.shape) - len(ids.shape) + 1
    if isinstance(axis, bool) or not isinstance(axis, int) or out_nd < 1 or not -out_nd <= axis < out_nd:
        raise ctx.fail(f"axis must be in [{-out_nd}, {out_nd}) for data {data} and segment ids {ids}; got {axis!r}")
    axis %= out_nd  # a negative axis counts from the output's end, as the gather that is its gradient does
    if data.shape[axis:axis + len(ids.shape)] != ids.shape:
        raise ctx.fail(f"data {data} must have the segment ids' shape {ids.shape} at axes {axis}.."
                       f"{axis + len(ids.shape) - 1}")
    shape = data.shape[:axis] + (n,) + data.shape[axis + len(ids.shape):]
    return {"out": [BlobDesc(shape, data.dtype)]}


def _segment_sum_sbp(ctx: SbpCtx) -> list[Signature]:
    ids_nd, data_nd = ctx.ndim("segment_ids"), ctx.ndim("data")
    axis = ctx.attrs["axis"] % (data_nd - ids_nd + 1)
    sigs = [ctx.make({"data": split(axis + i), "segment_ids": split(i), "out": PARTIAL_SUM}) for i in range(ids_nd)]
    for a in range(data_nd):
        if axis <= a < axis + ids_nd:
            continue
        out_axis = a if a < axis else a - ids_nd + 1
        sigs.append(ctx.make({"data": split(a), "segment_ids": BROADCAST, "out": split(out_axis)}))
    sigs.append(ctx.make({"data": PARTIAL_SUM, "segment_ids": BROADCAST, "out": PARTIAL_SUM}))
    # model parallel: data and ids B, each device sums the ids of its slice of the segments (kernels/reference/
    # segment.py); OneFlow declares it for the like op, and its kernel serves both
    sigs.append(ctx.make({"data": BROADCAST, "segment_ids": BROADCAST, "out": split(axis)}))
    return sigs


def _grad_segment_sum(ctx: Any) -> None:
    dx = add_op("gather", {"in": [ctx.dy("out")], "indices": [ctx.x("segment_ids")]},
                {"axis": ctx.attrs["axis"]})[0]
    ctx.set_dx("data", dx)


register_op(OpDef("unsorted_segment_sum", ("data", "segment_ids"), ("out",), _infer_segment_sum,
                  {"axis": 0, "num_segments": REQUIRED}, grad=_grad_segment_sum,
                  dtypes={"data": ARITHMETIC, "segment_ids": INDEX}, sbp=_segment_sum_sbp))


def _int(fn: str, what: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise OpInferError(f"{_where()}{fn}: {what} must be an int; got {value!r}")
    return value


def unsorted_segment_sum(data: LazyBlob, segment_ids: LazyBlob, num_segments: int, axis: int = 0,
                         name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.math.unsorted_segment_sum``: ``out[..., s, ...]`` sums the slices of ``data`` whose
    segment id is s; the ids' axes start at ``axis`` of ``data``. An id outside [0, num_segments) is an error when
    the op runs."""
    require_blob(data, "unsorted_segment_sum's data")
    require_blob(segment_ids, "unsorted_segment_sum's segment_ids")
    attrs = {"axis": _int("unsorted_segment_sum", "axis", axis),
             "num_segments": _int("unsorted_segment_sum", "num_segments", num_segments)}
    return add_op("unsorted_segment_sum", {"data": [data], "segment_ids": [segment_ids]}, attrs, name)[0]


def unsorted_segment_sum_like(data: LazyBlob, segment_ids: LazyBlob, like: LazyBlob, axis: int = 0,
                              name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.math.unsorted_segment_sum_like``: unsorted_segment_sum with ``like``'s shape (its length
    at ``axis`` is the number of segments)."""
    require_blob(data, "unsorted_segment_sum_like's data")
    require_blob(segment_ids, "unsorted_segment_sum_like's segment_ids")
    require_blob(like, "unsorted_segment_sum_like's like")
    axis = _int("unsorted_segment_sum_like", "axis", axis)
    d, i, lk = data.shape, segment_ids.shape, like.shape
    # unsorted_segment_sum_like_op.cpp's checks: like is data with the ids' axes folded into one
    if not (0 <= axis < len(lk) and len(d) - len(i) + 1 == len(lk) and d[:axis] == lk[:axis]
            and d[axis:axis + len(i)] == i and d[axis + len(i):] == lk[axis + 1:]):
        raise OpInferError(f"{_where()}unsorted_segment_sum_like: like {like.blob_desc} must be data "
                           f"{data.blob_desc} with the segment ids' axes {i} at axis {axis} replaced by one axis")
    if data.dtype != like.dtype:
        raise OpInferError(f"{_where()}unsorted_segment_sum_like: data ({data.dtype.name}) and like "
                           f"({like.dtype.name}) must have the same dtype")
    return add_op("unsorted_segment_sum_like", {"data": [data], "segment_ids": [segment_ids], "like": [like]},
                  {"axis": axis, "logical_axis_size": like.shape[axis]}, name)[0]


def unsorted_batch_segment_sum(data: LazyBlob, segment_ids: LazyBlob, num_segments: int,
                               name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.math.unsorted_batch_segment_sum``: a segment sum within each batch entry (the leading
    ``segment_ids.ndim - 1`` axes)."""
    require_blob(data, "unsorted_batch_segment_sum's data")
    require_blob(segment_ids, "unsorted_batch_segment_sum's segment_ids")
    n = _int("unsorted_batch_segment_sum", "num_segments", num_segments)
    return add_op("unsorted_batch_segment_sum", {"data": [data], "segment_ids": [segment_ids]},
                  {"num_segments": n}, name)[0]


__all__ = ["unsorted_batch_segment_sum", "unsorted_segment_sum", "unsorted_segment_sum_like"]
