"""Ops about dynamic blobs (runtime/dynamic.py): OneFlow v0.3.4's ``flow.cast_to_static_shape`` (``array_ops.py``,
``user/ops/cast_to_static_shape_op.cpp``: the output is the input's blob with ``is_dynamic`` cleared, its gradient an
identity), ``flow.math.reduced_shape_elem_cnt`` (``math_ops.py``, ``core/operator/shape_elem_cnt_op.cpp``: the
product of the input's current extents on the included axes, as a (1,) blob of ``dtype``, default int32; the input's
data is never read, only its header), and the ops whose output shape depends on values: ``flow.sync_dynamic_resize``
(``core/operator/sync_dynamic_resize_op.cpp``: ``x``'s first ``size[0]`` rows, dynamic) and ``flow.argwhere``
(``user/ops/arg_where_op.cpp``: the (n, rank) indices of the nonzero elements and n, then sync_dynamic_resize, as
OneFlow's ``array_ops.argwhere``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.dtype import DType, as_dtype, int32
from ..ir.sbp import BROADCAST, PARTIAL_SUM, split
from ._common import require_blob
from .registry import ANY, INDEX, SHAPE_FROM_DATA, STATIC_OUTPUTS, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import SbpCtx, Signature, broadcast_only


def _infer_static(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("input")
    return {"output": [BlobDesc(x.shape, x.dtype, False)]}


def _grad_static(ctx: Any) -> None:
    ctx.set_dx("input", add_op("identity", {"in": [ctx.dy("output")]})[0])


def _static_rule(ctx: SbpCtx) -> list[Signature]:
    sigs = [ctx.make({"input": split(i), "output": split(i)}) for i in range(ctx.ndim("input"))]
    return sigs + [ctx.make({"input": PARTIAL_SUM, "output": PARTIAL_SUM})]


def included_axes(attrs: dict[str, Any], ndim: int) -> list[int]:
    """OneFlow's GetInclusiveAxes: ``include_axis`` (None: every axis) minus ``exclude_axis``."""
    include = attrs["include_axis"]
    axes = range(ndim) if include is None else [int(a) % ndim for a in include]
    exclude = {int(a) % ndim for a in attrs["exclude_axis"]}
    return sorted(a for a in set(axes) if a not in exclude)


def _infer_cnt(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    for a in ctx.attrs["include_axis"] or ():
        if not -len(x.shape) <= int(a) < len(x.shape):
            raise ctx.fail(f"axis {a} is out of range for a rank-{len(x.shape)} blob")
    return {"y": [BlobDesc((1,), as_dtype(ctx.attrs["dtype"]), False)]}


def _cnt_rule(ctx: SbpCtx) -> list[Signature]:
    nd = ctx.ndim("x")
    axes = set(included_axes(ctx.attrs, nd))
    return [ctx.make({"x": split(i), "y": PARTIAL_SUM if i in axes else BROADCAST}) for i in range(nd)] + \
        [ctx.make({"x": BROADCAST, "y": BROADCAST})]


def _infer_resize(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, size = ctx.input("in"), ctx.input("size")
    if not x.shape or size.shape != (1,):
        raise ctx.fail(f"sync_dynamic_resize takes a blob of rank >= 1 and a (1,) size; got {x} and {size}")
    return {"out": [BlobDesc(x.shape, x.dtype, True)]}


def _resized(ins: list[Any]) -> list[tuple[int, ...]]:
    x, size = ins
    n = int(size.reshape(-1)[0])
    if not 0 <= n <= x.shape[0]:
        raise ValueError(f"sync_dynamic_resize: size {n} is outside [0, {x.shape[0]}] (the blob's rows)")
    return [(n, *x.shape[1:])]


def _infer_argwhere(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, dtype = ctx.input("input"), as_dtype(ctx.attrs["dtype"])
    if dtype not in INDEX:
        raise ctx.fail(f"argwhere's dtype must be an integer type; got {dtype.name}")
    n = 1
    for d in x.shape:
        n *= d
    return {"output": [BlobDesc((n, len(x.shape)), dtype, True)], "output_size": [BlobDesc((1,), dtype)]}


def _argwhere_shapes(ins: list[Any]) -> list[tuple[int, ...]]:
    return [(ins[0].size, ins[0].ndim), (1,)]  # the whole bound: sync_dynamic_resize cuts it to output_size


STATIC_OUTPUTS.update({"cast_to_static_shape", "shape_elem_cnt"})
SHAPE_FROM_DATA.update({"sync_dynamic_resize": _resized, "argwhere": _argwhere_shapes})
register_op(OpDef("sync_dynamic_resize", ("in", "size"), ("out",), _infer_resize,
                  dtypes={"in": ANY, "size": INDEX}, sbp=broadcast_only))
register_op(OpDef("argwhere", ("input",), ("output", "output_size"), _infer_argwhere, {"dtype": int32},
                  dtypes=dtypes_of(("input",), ANY), sbp=broadcast_only))
register_op(OpDef("cast_to_static_shape", ("input",), ("output",), _infer_static, grad=_grad_static,
                  dtypes=dtypes_of(("input",), ANY), sbp=_static_rule))
register_op(OpDef("shape_elem_cnt", ("x",), ("y",), _infer_cnt,
                  {"include_axis": None, "exclude_axis": (), "dtype": int32},
                  dtypes=dtypes_of(("x",), ANY), sbp=_cnt_rule))


def cast_to_static_shape(x: LazyBlob, name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.cast_to_static_shape``: the same blob, static (a static blob is returned as it is)."""
    x = require_blob(x, "the input of cast_to_static_shape")
    if not x.is_dynamic:
        return x
    return add_op("cast_to_static_shape", {"input": [x]}, name=name)[0]


def reduced_shape_elem_cnt(input_blob: LazyBlob, axis: Sequence[int] | None = None, dtype: DType | None = None,
                           name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.math.reduced_shape_elem_cnt``: the product of the blob's current extents on ``axis`` (every
    axis when None), a (1,) blob of ``dtype`` (int32 by default)."""
    x = require_blob(input_blob, "the input of reduced_shape_elem_cnt")
    if axis is not None and not isinstance(axis, (tuple, list)):
        raise TypeError(f"reduced_shape_elem_cnt's axis takes a list or tuple of ints; got {axis!r}")
    attrs: dict[str, Any] = {"include_axis": None if axis is None else tuple(int(a) for a in axis)}
    if dtype is not None:
        attrs["dtype"] = as_dtype(dtype)
    return add_op("shape_elem_cnt", {"x": [x]}, attrs, name=name)[0]


def sync_dynamic_resize(inputs: LazyBlob, size: LazyBlob, name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.sync_dynamic_resize``: ``inputs``' first ``size[0]`` rows, a dynamic blob."""
    x = require_blob(inputs, "inputs of sync_dynamic_resize")
    return add_op("sync_dynamic_resize", {"in": [x], "size": [require_blob(size, "size of sync_dynamic_resize")]},
                  name=name)[0]


def argwhere(condition: LazyBlob, dtype: DType | None = None, name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.argwhere``: the indices of ``condition``'s nonzero elements, (n, rank), a dynamic blob."""
    x = require_blob(condition, "condition of argwhere")
    attrs = {"dtype": as_dtype(dtype) if dtype is not None else int32}
    output, size = add_op("argwhere", {"input": [x]}, attrs, name=name)
    return sync_dynamic_resize(output, size)
