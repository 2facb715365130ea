"""Array ops: reshape, transpose, concat, identity, cast, constant, zeros_like, ones_like (with gradients)."""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.dtype import as_dtype
from ._common import require_blob
from .registry import ANY, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import broadcast_only, elementwise, off_axis, reshape_rule, transpose_rule


def _infer_reshape(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("in")
    shape = list(ctx.attrs["shape"])
    if shape.count(-1) > 1:
        raise ctx.fail(f"reshape to {shape}: at most one dimension may be -1")
    if any(d == 0 or d < -1 for d in shape):
        raise ctx.fail(f"reshape to {shape}: dimensions must be positive (or one -1)")
    known = math.prod(d for d in shape if d != -1)
    if -1 in shape:
        if x.elem_cnt % known:
            raise ctx.fail(f"cannot reshape {x} ({x.elem_cnt} elements) to {shape}: {x.elem_cnt} is not a "
                           f"multiple of {known}")
        shape[shape.index(-1)] = x.elem_cnt // known
    elif known != x.elem_cnt:
        raise ctx.fail(f"cannot reshape {x} ({x.elem_cnt} elements) to {shape} ({known} elements)")
    return {"out": [BlobDesc(tuple(shape), x.dtype)]}


def _infer_transpose(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("input")
    perm = list(ctx.attrs["perm"])
    if sorted(perm) != list(range(len(x.shape))):
        raise ctx.fail(f"perm {perm} is not a permutation of the {len(x.shape)} axes of {x}")
    return {"output": [BlobDesc(tuple(x.shape[p] for p in perm), x.dtype)]}


def _infer_concat(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    ins = ctx.inputs["in"]
    first = ins[0]
    rank = len(first.shape)
    axis = ctx.attrs["axis"]
    if not -rank <= axis < rank:
        raise ctx.fail(f"axis {axis} is out of range for rank-{rank} inputs")
    axis %= rank
    for other in ins[1:]:
        if other.dtype != first.dtype or len(other.shape) != rank or any(
                a != b for i, (a, b) in enumerate(zip(first.shape, other.shape)) if i != axis):
            raise ctx.fail(f"inputs {', '.join(map(str, ins))} must match in dtype and in every axis but {axis}")
    shape = list(first.shape)
    shape[axis] = sum(d.shape[axis] for d in ins)
    bound = ctx.attrs.get("max_dim_size")
    if bound is not None:  # OneFlow's concat_op.cpp: dynamic inputs' axis is bounded by max_dim_size
        static = sum(d.shape[axis] for d in ins if not d.is_dynamic)
        if static > bound:
            raise ctx.fail(f"max_dim_size {bound} is too small to hold the joined static size {static} of axis {axis}")
        if any(d.is_dynamic for d in ins):
            shape[axis] = bound
    return {"out": [BlobDesc(tuple(shape), first.dtype)]}


def _infer_same(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [ctx.input("in")]}


def _infer_cast(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [BlobDesc(ctx.input("in").shape, as_dtype(ctx.attrs["dtype"]))]}


def _infer_constant(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [BlobDesc(tuple(ctx.attrs["shape"]), as_dtype(ctx.attrs["dtype"]))]}


def _infer_like(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [ctx.input("like")]}


def _infer_split_like(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("in")
    return {"out": [BlobDesc(like.shape, x.dtype) for like in ctx.inputs["like"]]}


def _grad_reshape(ctx: Any) -> None:
    ctx.set_dx("in", reshape(ctx.dy("out"), ctx.x("in").shape))


def _grad_transpose(ctx: Any) -> None:
    perm = ctx.attrs["perm"]
    inverse = [perm.index(i) for i in range(len(perm))]
    ctx.set_dx("input", transpose(ctx.dy("output"), inverse))


def _grad_concat(ctx: Any) -> None:
    likes = [ctx.x("in", i) for i in range(len(ctx.op.inputs["in"]))]
    parts = add_op("split_like", {"in": [ctx.dy("out")], "like": likes}, {"axis": ctx.attrs["axis"]})
    for i, part in enumerate(parts):
        ctx.set_dx("in", part, i)


def _grad_identity(ctx: Any) -> None:
    ctx.set_dx("in", ctx.dy("out"))


def _grad_cast(ctx: Any) -> None:
    ctx.set_dx("in", cast(ctx.dy("out"), ctx.x("in").dtype))


def _no_grad(ctx: Any) -> None:
    """The output does not depend on the input's values: no gradient flows back."""


for _op in (
    OpDef("reshape", ("in",), ("out",), _infer_reshape, {"shape": REQUIRED}, grad=_grad_reshape, sbp=reshape_rule),
    OpDef("transpose", ("input",), ("output",), _infer_transpose, {"perm": REQUIRED, "batch_axis_non_change": False},
          grad=_grad_transpose,
          sbp=transpose_rule),
    OpDef("concat", ("in",), ("out",), _infer_concat, {"axis": 0, "max_dim_size": None}, grad=_grad_concat,
          sbp=off_axis("in", partial=True)),
    OpDef("split_like", ("in", "like"), ("out",), _infer_split_like, {"axis": 0}, sbp=off_axis("in", partial=True)),
    OpDef("identity", ("in",), ("out",), _infer_same, grad=_grad_identity, sbp=elementwise("in", partial=True)),
    OpDef("cast", ("in",), ("out",), _infer_cast, {"dtype": REQUIRED}, grad=_grad_cast, sbp=elementwise("in")),
    OpDef("constant", (), ("out",), _infer_constant,
          {"value": REQUIRED, "dtype": REQUIRED, "shape": REQUIRED}, sbp=broadcast_only),
    OpDef("zeros_like", ("like",), ("out",), _infer_like, grad=_no_grad, sbp=elementwise("like")),
    OpDef("ones_like", ("like",), ("out",), _infer_like, grad=_no_grad, sbp=elementwise("like")),
):
    register_op(dataclasses.replace(_op, dtypes=dict.fromkeys(_op.inputs, ANY)))  # they move or fill values


def reshape(x: LazyBlob, shape: Sequence[int], name: str | None = None) -> LazyBlob:
    """Reshape to ``shape``; one dimension may be -1."""
    require_blob(x, "the input of reshape")
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) for d in shape):
        raise TypeError(f"reshape's shape must be a list of ints; got {shape!r}")
    return add_op("reshape", {"in": [x]}, {"shape": tuple(shape)}, name)[0]


def transpose(a: LazyBlob, perm: Sequence[int] | None = None, conjugate: bool = False,
              batch_axis_non_change: bool = False, name: str | None = None) -> LazyBlob:
    """``batch_axis_non_change``: OneFlow's stopgap for its batch-axis inference (transpose_ops.cpp's
    BatchAxisInferFn): the output keeps the input's batch axis number instead of following the permutation."""
    require_blob(a, "the input of transpose")
    if not isinstance(batch_axis_non_change, bool):
        raise TypeError(f"transpose's batch_axis_non_change takes a bool; got {batch_axis_non_change!r}")
    if conjugate:  # OneFlow: NotImplementedError
        raise NotImplementedError("transpose(conjugate=True) is not available (as in OneFlow)")
    perm = tuple(perm) if perm is not None else tuple(reversed(range(len(a.shape))))
    attrs: dict[str, Any] = {"perm": perm}
    if batch_axis_non_change:
        attrs["batch_axis_non_change"] = True
    return add_op("transpose", {"input": [a]}, attrs, name)[0]


def concat(inputs: Sequence[LazyBlob] | None = None, axis: int = 0, max_dim_size: int | None = None,
           name: str | None = None, values: Sequence[LazyBlob] | None = None) -> LazyBlob:
    """OneFlow's ``flow.concat(inputs, axis, max_dim_size, name, values)`` (``values``: the older name of
    ``inputs``). ``max_dim_size`` bounds the joined axis of dynamic inputs in OneFlow; flowlab's blobs are static,
    so it is only checked to hold the joined size. One input is returned as it is, as OneFlow does."""
    if values is not None:
        if inputs is not None:
            raise TypeError("concat takes its blobs as inputs= or values= (the older name), not both")
        inputs = values
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError(f"concat takes a non-empty list of blobs; got {inputs!r}")
    blobs = [require_blob(v, f"concat input {i}") for i, v in enumerate(inputs)]
    if len(blobs) == 1:
        return blobs[0]
    if max_dim_size is not None:
        if not isinstance(max_dim_size, int) or isinstance(max_dim_size, bool):
            raise TypeError(f"concat's max_dim_size takes an int; got {max_dim_size!r}")
        rank = len(blobs[0].shape)
        ax = axis + rank if isinstance(axis, int) and axis < 0 else axis
        same_rank = all(len(b.shape) == rank for b in blobs)  # else the op's inference says what differs
        joined = sum(b.shape[ax] for b in blobs if not b.is_dynamic) \
            if same_rank and isinstance(ax, int) and 0 <= ax < rank else 0
        if max_dim_size < joined:
            raise ValueError(f"concat: max_dim_size {max_dim_size} is too small to hold the joined size {joined} of "
                             f"axis {axis} ({', '.join(str(b.blob_desc) for b in blobs)})")
        if any(b.is_dynamic for b in blobs):  # the output's static extent on the axis (OneFlow's concat_op.cpp)
            return add_op("concat", {"in": blobs}, {"axis": int(axis), "max_dim_size": max_dim_size}, name)[0]
    return add_op("concat", {"in": blobs}, {"axis": int(axis)}, name)[0]


def identity(x: LazyBlob, name: str | None = None) -> LazyBlob:
    return add_op("identity", {"in": [require_blob(x, "the input of identity")]}, name=name)[0]


def cast(x: LazyBlob, dtype: Any, name: str | None = None) -> LazyBlob:
    require_blob(x, "the input of cast")
    return add_op("cast", {"in": [x]}, {"dtype": as_dtype(dtype)}, name)[0]


def constant(value: float, dtype: Any = None, shape: Sequence[int] | None = None, name: str | None = None) -> LazyBlob:
    """A blob of ``shape`` (default (1,)) filled with ``value``; ``dtype`` defaults to the job's default data
    type (float32). An integer dtype keeps ``value`` as an exact int."""
    from ..frontend.builder import current_builder

    dtype = as_dtype(dtype or current_builder().job_conf.get("default_data_type") or "float32")
    shape = tuple(shape) if shape is not None else (1,)
    if not all(isinstance(d, int) and d > 0 for d in shape):
        raise TypeError(f"constant's shape must be a list of positive ints; got {shape!r}")
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"constant's value must be a Python number; got {value!r}")
    value = float(value) if dtype.is_floating else int(value)
    return add_op("constant", attrs={"value": value, "dtype": dtype, "shape": shape}, name=name)[0]


def zeros_like(like: LazyBlob, name: str | None = None) -> LazyBlob:
    return add_op("zeros_like", {"like": [require_blob(like, "zeros_like's input")]}, name=name)[0]


def ones_like(like: LazyBlob, name: str | None = None) -> LazyBlob:
    return add_op("ones_like", {"like": [require_blob(like, "ones_like's input")]}, name=name)[0]


def flatten(input: LazyBlob, start_dim: int = 0, end_dim: int = -1, name: str | None = None) -> LazyBlob:
    """Merge axes start_dim..end_dim into one (OneFlow's flatten; a reshape)."""
    require_blob(input, "flatten's input")
    rank = len(input.shape)
    start, end = start_dim % rank, end_dim % rank
    if start > end:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} for rank {rank}")
    merged = 1
    for d in input.shape[start:end + 1]:
        merged *= d
    return reshape(input, [*input.shape[:start], merged, *input.shape[end + 1:]], name=name)


def expand_dims(input: LazyBlob, axis: int, name: str | None = None) -> LazyBlob:
    require_blob(input, "expand_dims's input")
    rank = len(input.shape) + 1
    if not -rank <= axis < rank:
        raise ValueError(f"expand_dims: axis {axis} is out of range for an output of rank {rank}")
    axis %= rank
    return reshape(input, [*input.shape[:axis], 1, *input.shape[axis:]], name=name)


def squeeze(input: LazyBlob, axis: Sequence[int] | None = None, name: str | None = None) -> LazyBlob:
    require_blob(input, "squeeze's input")
    rank = len(input.shape)
    axes = [i for i, d in enumerate(input.shape) if d == 1] if axis is None else [a % rank for a in axis]
    for a in axes:
        if input.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} of {input.blob_desc} has size {input.shape[a]}, not 1")
    shape = [d for i, d in enumerate(input.shape) if i not in axes] or [1]
    return reshape(input, shape, name=name)
