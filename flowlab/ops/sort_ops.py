"""Sorting ops: ``flow.sort``, ``flow.argsort``, ``flow.math.top_k`` and ``flow.math.in_top_k``.

Declared as OneFlow v0.3.4 declares them (``oneflow/user/ops/arg_sort_op.cpp``, ``sort_op.cpp``, ``top_k_op.cpp``,
``in_top_k_op.cpp``; the user functions in ``oneflow/python/ops/sort_ops.py`` and ``math_ops.py``): the ops work on
the last axis only, and the user function moves another axis there with a transpose and back. Ties keep the
lower index first (the CPU kernels' comparator); indices are int32, in_top_k's answer int8. None of them has a
gradient in OneFlow (sort's output is not differentiable there either).
"""

from __future__ import annotations

from ..errors import OpInferError
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..frontend.location import user_location
from ..ir import BlobDesc
from ..ir.dtype import float32, float64, int8, int32, int64
from ..ir.sbp import split
from ._common import require_blob
from .registry import FLOATING, INDEX, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import SbpCtx, Signature

DIRECTIONS = ("ASCENDING", "DESCENDING")
SORT_DTYPES = (float32, float64, int32, int64)  # arg_sort_kernel.cpp / top_k_kernel.cpp register these


def _where() -> str:
    loc = user_location()
    return f"{loc}: " if loc else ""


def _check_direction(ctx: InferCtx) -> None:
    if ctx.attrs["direction"] not in DIRECTIONS:
        raise ctx.fail(f"direction must be 'ASCENDING' or 'DESCENDING'; got {ctx.attrs['direction']!r}")


def _infer_arg_sort(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    _check_direction(ctx)
    return {"out": [BlobDesc(ctx.input("in").shape, int32)]}


def _infer_sort(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    _check_direction(ctx)
    return {"out": [ctx.input("in")]}


def _infer_top_k(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, k = ctx.input("in"), ctx.attrs["k"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ctx.fail(f"top_k's k must be a positive int; got {k!r}")
    return {"out": [BlobDesc(x.shape[:-1] + (min(k, x.shape[-1]),), int32)]}


def _infer_in_top_k(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    targets, predictions, k = ctx.input("targets"), ctx.input("predictions"), ctx.attrs["k"]
    if len(targets.shape) != 1:
        raise ctx.fail(f"in_top_k's targets must have rank 1 (one class per instance); got {targets}")
    if len(predictions.shape) != 2:
        raise ctx.fail(f"in_top_k's predictions must have rank 2 (instances, classes); got {predictions}")
    if predictions.shape[0] != targets.shape[0]:
        raise ctx.fail(f"in_top_k: predictions {predictions} must have one row per target of {targets}")
    if isinstance(k, bool) or not isinstance(k, int):
        raise ctx.fail(f"in_top_k's k must be an int; got {k!r}")
    return {"out": [BlobDesc(targets.shape, int8)]}


def _leading_axes(ctx: SbpCtx) -> list[Signature]:
    """arg_sort_op.cpp / sort_op.cpp / top_k_op.cpp: split on any axis but the sorted (last) one."""
    return [ctx.make({"in": split(i), "out": split(i)}) for i in range(ctx.ndim("in") - 1)]


def _in_top_k_sbp(ctx: SbpCtx) -> list[Signature]:
    """in_top_k_op.cpp: the instances split all three."""
    return [ctx.make({"targets": split(0), "predictions": split(0), "out": split(0)})]


register_op(OpDef("arg_sort", ("in",), ("out",), _infer_arg_sort, {"direction": REQUIRED},
                  dtypes={"in": SORT_DTYPES}, sbp=_leading_axes))
register_op(OpDef("sort", ("in",), ("out",), _infer_sort, {"direction": REQUIRED},
                  dtypes={"in": SORT_DTYPES}, sbp=_leading_axes))
register_op(OpDef("top_k", ("in",), ("out",), _infer_top_k, {"k": REQUIRED, "sorted": True},
                  dtypes={"in": SORT_DTYPES}, sbp=_leading_axes))
register_op(OpDef("in_top_k", ("targets", "predictions"), ("out",), _infer_in_top_k, {"k": REQUIRED},
                  dtypes={"targets": INDEX, "predictions": FLOATING}, sbp=_in_top_k_sbp))


def _normal_axis(fn: str, x: LazyBlob, axis: int) -> int:
    rank = len(x.shape)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
        raise OpInferError(f"{_where()}{fn}: axis must be an int in [{-rank}, {rank}) for input {x.blob_desc}; "
                           f"got {axis!r}")
    return axis % rank


def _at_last_axis(fn: str, x: LazyBlob, axis: int, op_type: str, attrs: dict, name: str | None) -> LazyBlob:
    """OneFlow's pattern: the op on the last axis; another axis is transposed there and back."""
    require_blob(x, f"{fn}'s input")
    axis = _normal_axis(fn, x, axis)
    last = len(x.shape) - 1
    if axis == last:
        return add_op(op_type, {"in": [x]}, attrs, name)[0]
    from .array_ops import transpose

    perm = list(range(len(x.shape)))  # transpose_util.get_perm_when_transpose_axis_to_last_dim
    perm.append(perm.pop(axis))
    inverse = [perm.index(i) for i in range(len(perm))]
    y = add_op(op_type, {"in": [transpose(x, perm)]}, attrs, name)[0]
    return transpose(y, inverse)


def _direction(fn: str, direction: str) -> str:
    if direction not in DIRECTIONS:
        raise OpInferError(f"{_where()}{fn}: direction must be 'ASCENDING' or 'DESCENDING'; got {direction!r}")
    return direction


def sort(input: LazyBlob, axis: int = -1, direction: str = "ASCENDING", name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.sort``: the values sorted along ``axis``."""
    return _at_last_axis("sort", input, axis, "sort", {"direction": _direction("sort", direction)}, name)


def argsort(input: LazyBlob, axis: int = -1, direction: str = "ASCENDING", name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.argsort``: int32 indices that sort ``input`` along ``axis`` (ties: lower index first)."""
    return _at_last_axis("argsort", input, axis, "arg_sort", {"direction": _direction("argsort", direction)}, name)


def top_k(input: LazyBlob, axis: int = -1, k: int = 1, sorted: bool = True, name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.math.top_k``: the int32 indices of the ``min(k, n)`` largest entries along ``axis``
    (indices only, as OneFlow). flowlab always returns them sorted (largest first, ties by lower index);
    OneFlow's ``sorted=False`` leaves the order unspecified, so this is one of the orders it may give."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise OpInferError(f"{_where()}top_k: k must be a positive int; got {k!r}")
    return _at_last_axis("top_k", input, axis, "top_k", {"k": k, "sorted": bool(sorted)}, name)


def in_top_k(targets: LazyBlob, predictions: LazyBlob, k: int, name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.math.in_top_k``: int8 1 where ``predictions[i, targets[i]]`` is among the ``k`` largest of
    row i (fewer than k entries are strictly larger), 0 otherwise and where the row holds a non-finite value
    (in_top_k_kernel_util.cpp). OneFlow's op takes float32 predictions only; flowlab also takes float16 and
    float64 (computed in their own type), as its other floating ops do."""
    require_blob(targets, "in_top_k's targets")
    require_blob(predictions, "in_top_k's predictions")
    return add_op("in_top_k", {"targets": [targets], "predictions": [predictions]}, {"k": k}, name)[0]


__all__ = ["argsort", "in_top_k", "sort", "top_k"]
