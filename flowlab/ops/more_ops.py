"""More ops of the training issue: gelu, leaky_relu, flatten, expand_dims, squeeze, gather, slice, and the
dense-label and sigmoid cross entropies, each with its gradient rule."""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Sequence
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.dtype import int8, int32
from ._common import require_blob, same_dtype
from .array_ops import reshape
from .registry import ANY, ARITHMETIC, FLOATING, INDEX, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import elementwise, gather_rule, segment_sum_rule, slice_rule


def _same(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"y": [ctx.input("x")]}


def _dx_like(arg: str):
    return lambda ctx: {"dx": [ctx.input(arg)]}


def _grad_act(ctx: Any) -> None:
    attrs = {"alpha": ctx.attrs["alpha"]} if ctx.op.op_type == "leaky_relu" else {}
    ctx.set_dx("x", add_op(f"{ctx.op.op_type}_grad", {"x": [ctx.x("x")], "dy": [ctx.dy("y")]}, attrs)[0])


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


def _infer_xent(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    logits, labels = ctx.input("prediction"), ctx.input("label")
    if ctx.op_type.startswith("sigmoid_cross_entropy"):
        # OneFlow v0.3.4's sigmoid_cross_entropy (a label_type in its conf): int8 or int32 labels, or labels of
        # the logits' own floating dtype; the loss has the logits' dtype
        if labels.dtype.is_floating and labels.dtype != logits.dtype:
            raise ctx.fail(f"labels {labels} must be int8, int32 or of the logits' dtype; the logits are {logits} "
                           "(cast the labels with flow.cast)")
    else:
        same_dtype(ctx, logits, labels)
    if logits.shape != labels.shape:
        raise ctx.fail(f"labels {labels} must have the shape of logits {logits}")
    out_shape = logits.shape[:-1] if ctx.op_type == "softmax_cross_entropy" else logits.shape
    outs = {"out": [BlobDesc(out_shape or (1,), logits.dtype)]}
    if ctx.op_type == "softmax_cross_entropy":
        outs["prob"] = [logits]
    return outs


def _grad_softmax_xent(ctx: Any) -> None:
    dx = add_op("softmax_cross_entropy_grad", {"prob": [ctx.y("prob")], "label": [ctx.x("label")],
                                               "dy": [ctx.dy("out")]})[0]
    ctx.set_dx("prediction", dx)


def _grad_sigmoid_xent(ctx: Any) -> None:
    dx = add_op("sigmoid_cross_entropy_grad", {"prediction": [ctx.x("prediction")], "label": [ctx.x("label")],
                                               "dy": [ctx.dy("out")]})[0]
    ctx.set_dx("prediction", dx)


_ANY = ("slice",)  # a copy
_SIGMOID_LABELS = FLOATING + (int8, int32)  # core/kernel/sigmoid_cross_entropy_kernel.cu's label types
for _op in (
    OpDef("gelu", ("x",), ("y",), _same, grad=_grad_act, sbp=elementwise("x")),
    OpDef("gelu_grad", ("x", "dy"), ("dx",), _dx_like("x"), sbp=elementwise("x")),
    OpDef("leaky_relu", ("x",), ("y",), _same, {"alpha": 0.2}, grad=_grad_act, sbp=elementwise("x")),
    OpDef("leaky_relu_grad", ("x", "dy"), ("dx",), _dx_like("x"), {"alpha": 0.2}, sbp=elementwise("x")),
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
    OpDef("slice", ("x",), ("y",), _infer_slice, {"slice_tup_list": REQUIRED}, grad=_grad_slice, sbp=slice_rule("x")),
    OpDef("slice_grad", ("dy", "like"), ("dx",), _infer_slice_grad, {"slice_tup_list": REQUIRED},
          dtypes={"dy": ARITHMETIC, "like": ANY}, sbp=slice_rule("like")),
    OpDef("softmax_cross_entropy", ("prediction", "label"), ("prob", "out"), _infer_xent, grad=_grad_softmax_xent,
          sbp=elementwise("prediction", keep_last=False)),
    OpDef("softmax_cross_entropy_grad", ("prob", "label", "dy"), ("dx",), _dx_like("prob"),
          sbp=elementwise("prob", keep_last=False)),
    OpDef("sigmoid_cross_entropy", ("prediction", "label"), ("out",), _infer_xent, grad=_grad_sigmoid_xent,
          dtypes=dtypes_of(("prediction", "label"), FLOATING, label=_SIGMOID_LABELS), sbp=elementwise("prediction")),
    OpDef("sigmoid_cross_entropy_grad", ("prediction", "label", "dy"), ("dx",), _dx_like("prediction"),
          dtypes=dtypes_of(("prediction", "label", "dy"), FLOATING, label=_SIGMOID_LABELS),
          sbp=elementwise("prediction")),
):
    if not _op.dtypes:  # the activations and cross entropies (and their gradients) are floating only
        _op = dataclasses.replace(_op, dtypes=dtypes_of(_op.inputs, ANY if _op.op_type in _ANY else FLOATING))
    register_op(_op)


def gelu(x: LazyBlob, name: str | None = None) -> LazyBlob:
    """The exact (erf) GELU: x * Phi(x)."""
    return add_op("gelu", {"x": [require_blob(x, "gelu's input")]}, name=name)[0]


def leaky_relu(x: LazyBlob, alpha: float = 0.2, name: str | None = None) -> LazyBlob:
    return add_op("leaky_relu", {"x": [require_blob(x, "leaky_relu's input")]}, {"alpha": float(alpha)}, name)[0]


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


def softmax_cross_entropy_with_logits(labels: LazyBlob, logits: LazyBlob, name: str | None = None) -> LazyBlob:
    """Cross entropy against dense label distributions (rows summing to 1), per example."""
    _prob, out = add_op("softmax_cross_entropy", {"prediction": [require_blob(logits, "logits")],
                                                  "label": [require_blob(labels, "labels")]}, name=name)
    return out


def sigmoid_cross_entropy_with_logits(labels: LazyBlob, logits: LazyBlob, name: str | None = None) -> LazyBlob:
    """Elementwise binary cross entropy of sigmoid(logits) against labels in [0, 1]: float labels of the logits'
    dtype, or int8/int32 labels (as OneFlow v0.3.4); the loss has the logits' dtype."""
    return add_op("sigmoid_cross_entropy", {"prediction": [require_blob(logits, "logits")],
                                            "label": [require_blob(labels, "labels")]}, name=name)[0]


__all__ = ["expand_dims", "flatten", "gather", "gelu", "leaky_relu",
           "sigmoid_cross_entropy_with_logits", "slice", "slice_v2", "softmax_cross_entropy_with_logits", "squeeze"]
