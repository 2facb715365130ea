"""Ops that index with data, beyond gather: ``flow.one_hot`` (OneFlow's one_hot op), and ``flow.gather(...,
batch_dims=)``, which OneFlow v0.3.4 builds as its batch_gather op, with unsorted_batch_segment_sum as the gradient.

Each is declared as OneFlow's registration declares it (``oneflow/user/ops/one_hot_op.cpp``,
``batch_gather_op.cpp``, ``unsorted_batch_segment_sum_op.cpp``): shapes, index dtypes, SBP signatures, gradients.
"""

from __future__ import annotations

from typing import Any

from ..errors import OpInferError
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..frontend.location import user_location
from ..ir import BlobDesc
from ..ir.dtype import DType, float16, float32, float64, int32, int64
from ..ir.sbp import BROADCAST, PARTIAL_SUM, split
from ._common import require_blob
from .registry import ANY, FLOATING, INDEX, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import SbpCtx, Signature

# one_hot_kernel.cpp/.cu register these output types (float16 on the GPU); the attrs carry the on/off values
ONE_HOT_DTYPES: tuple[DType, ...] = (int32, int64, float16, float32, float64)


def _where() -> str:
    loc = user_location()
    return f"{loc}: " if loc else ""


# -- one_hot ------------------------------------------------------------------------------------------------
def _infer_one_hot(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    indices, depth, dtype = ctx.input("indices"), ctx.attrs["depth"], ctx.attrs["dtype"]
    if not isinstance(depth, int) or depth <= 0:
        raise ctx.fail(f"one_hot's depth must be a positive int; got {depth!r}")
    if not indices.shape:
        raise ctx.fail(f"one_hot needs indices of rank >= 1; got {indices}")
    if dtype not in ONE_HOT_DTYPES:
        raise ctx.fail(f"one_hot's dtype must be one of {', '.join(d.name for d in ONE_HOT_DTYPES)}; got {dtype!r}")
    return {"out": [BlobDesc(indices.shape + (depth,), dtype)]}


def _one_hot_sbp(ctx: SbpCtx) -> list[Signature]:
    """one_hot_op.cpp: indices S(i) -> out S(i) for each axis of the indices."""
    return [ctx.make({"indices": split(i), "out": split(i)}) for i in range(ctx.ndim("indices"))]


register_op(OpDef("one_hot", ("indices",), ("out",), _infer_one_hot,
                  {"depth": REQUIRED, "floating_on_value": 1.0, "integer_on_value": 1, "floating_off_value": 0.0,
                   "integer_off_value": 0, "dtype": REQUIRED},
                  dtypes={"indices": INDEX}, sbp=_one_hot_sbp))


def one_hot(indices: LazyBlob, depth: int, on_value: int | float = 1, off_value: int | float = 0, axis: int = -1,
            dtype: DType | None = None, name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.one_hot``: a new axis of ``depth`` at ``axis``, ``on_value`` where it equals the index and
    ``off_value`` elsewhere. As in OneFlow the op appends the axis and a transpose moves it to ``axis``; an index
    outside [0, depth) is an error when the op runs (OneFlow's kernel CHECKs it)."""
    require_blob(indices, "one_hot's indices")
    out_ndims = len(indices.shape) + 1
    if not isinstance(axis, int) or not -out_ndims <= axis < out_ndims:
        raise OpInferError(f"{_where()}one_hot: axis must be in [{-out_ndims}, {out_ndims}) for indices "
                           f"{indices.blob_desc}; got {axis!r}")
    if dtype is None:  # OneFlow v0.3.4's op builder fails on None too (an AttributeError): say so plainly
        raise OpInferError(f"{_where()}one_hot needs dtype=, the output type (flow.float32, flow.int32, ...)")
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise OpInferError(f"{_where()}one_hot's depth must be a positive int; got {depth!r}")
    for what, value in (("on_value", on_value), ("off_value", off_value)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise OpInferError(f"{_where()}one_hot's {what} must be a number; got {value!r}")
    attrs = {"depth": depth, "floating_on_value": float(on_value), "integer_on_value": int(on_value),
             "floating_off_value": float(off_value), "integer_off_value": int(off_value), "dtype": dtype}
    out = add_op("one_hot", {"indices": [indices]}, attrs, name)[0]
    axis %= out_ndims
    if axis != out_ndims - 1:
        from .array_ops import transpose

        perm = list(range(out_ndims - 1))
        perm.insert(axis, out_ndims - 1)
        out = transpose(out, perm)
    return out


# -- batch_gather and unsorted_batch_segment_sum ------------------------------------------------------------
def _batch_axes_match(ctx: InferCtx, ids: BlobDesc, data: BlobDesc, ids_arg: str, data_arg: str) -> None:
    if len(ids.shape) < 2:
        # OneFlow's SBP functions refuse it too: the leading axes are the batch, the last one the positions
        raise ctx.fail(f"{ids_arg} must have rank >= 2 (batch axes, then the positions); got {ids}")
    if len(ids.shape) > len(data.shape):
        raise ctx.fail(f"{ids_arg} {ids} has more axes than {data_arg} {data}")
    if ids.shape[:-1] != data.shape[:len(ids.shape) - 1]:
        raise ctx.fail(f"the batch axes of {ids_arg} {ids} (all but its last) must equal the leading axes of "
                       f"{data_arg} {data}")


def _infer_batch_gather(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    params, ids = ctx.input("in"), ctx.input("indices")
    _batch_axes_match(ctx, ids, params, "indices", "in")
    shape = list(params.shape)
    shape[len(ids.shape) - 1] = ids.shape[-1]
    return {"out": [BlobDesc(tuple(shape), params.dtype)]}


def _infer_batch_segment_sum(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    data, ids, n = ctx.input("data"), ctx.input("segment_ids"), ctx.attrs["num_segments"]
    if not isinstance(n, int) or n < 1:
        raise ctx.fail(f"num_segments must be a positive int; got {n!r}")
    _batch_axes_match(ctx, ids, data, "segment_ids", "data")
    if data.shape[len(ids.shape) - 1] != ids.shape[-1]:
        raise ctx.fail(f"data {data} must have {ids.shape[-1]} rows along axis {len(ids.shape) - 1}, one per "
                       f"segment id of {ids}")
    shape = list(data.shape)
    shape[len(ids.shape) - 1] = n
    return {"out": [BlobDesc(tuple(shape), data.dtype)]}


def _batch_rule(data: str, ids: str) -> Any:
    """batch_gather_op.cpp / unsorted_batch_segment_sum_op.cpp: the batch axes (all but the ids' last) split all
    three; ids B with the data P gives out P (both ops are linear in the data)."""

    def rule(ctx: SbpCtx) -> list[Signature]:
        sigs = [ctx.make({data: split(i), ids: split(i), "out": split(i)}) for i in range(ctx.ndim(ids) - 1)]
        sigs.append(ctx.make({data: PARTIAL_SUM, ids: BROADCAST, "out": PARTIAL_SUM}))
        return sigs

    return rule


def _grad_batch_gather(ctx: Any) -> None:
    params, ids = ctx.x("in"), ctx.x("indices")
    dx = add_op("unsorted_batch_segment_sum", {"data": [ctx.dy("out")], "segment_ids": [ids]},
                {"num_segments": params.shape[len(ids.shape) - 1]})[0]
    ctx.set_dx("in", dx)


def _grad_batch_segment_sum(ctx: Any) -> None:
    dx = add_op("batch_gather", {"in": [ctx.dy("out")], "indices": [ctx.x("segment_ids")]})[0]
    ctx.set_dx("data", dx)


register_op(OpDef("batch_gather", ("in", "indices"), ("out",), _infer_batch_gather, grad=_grad_batch_gather,
                  dtypes={"in": ANY, "indices": INDEX}, sbp=_batch_rule("in", "indices")))
register_op(OpDef("unsorted_batch_segment_sum", ("data", "segment_ids"), ("out",), _infer_batch_segment_sum,
                  {"num_segments": REQUIRED}, grad=_grad_batch_segment_sum,
                  dtypes={"data": FLOATING, "segment_ids": INDEX}, sbp=_batch_rule("data", "segment_ids")))


def batch_gather(params: LazyBlob, indices: LazyBlob, axis: int | None, batch_dims: int,
                 name: str | None = None) -> LazyBlob:
    """``flow.gather(params, indices, axis=, batch_dims=)`` with ``batch_dims > 0``, as OneFlow v0.3.4 builds it:
    only ``axis == batch_dims`` (or None) is accepted, and the op is batch_gather, which gathers along axis
    ``indices.ndim - 1`` within each batch entry (the leading ``indices.ndim - 1`` axes)."""
    require_blob(params, "gather's params")
    require_blob(indices, "gather's indices")
    rank = len(params.shape)
    if axis is None:
        axis = batch_dims
    elif axis < 0:
        if axis < -rank:
            raise OpInferError(f"{_where()}gather: axis {axis} is out of range for params {params.blob_desc}")
        axis += rank
    if axis > batch_dims:
        raise NotImplementedError(f"{_where()}gather with batch_dims={batch_dims} and axis={axis} > batch_dims: "
                                  "OneFlow v0.3.4 does not implement it either (only axis == batch_dims)")
    if axis < batch_dims:
        raise OpInferError(f"{_where()}gather: axis ({axis}) must not be smaller than batch_dims ({batch_dims})")
    return add_op("batch_gather", {"in": [params], "indices": [indices]}, name=name)[0]


__all__ = ["batch_gather", "one_hot"]
