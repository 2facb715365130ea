"""Shared helpers for op definitions: argument checks and broadcasting shapes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import OpInferError
from ..frontend.blob import LazyBlob
from ..ir import BlobDesc
from .registry import InferCtx


def require_blob(value: Any, what: str) -> LazyBlob:
    if not isinstance(value, LazyBlob):
        raise OpInferError(f"{what} must be a blob made inside the job function; got {type(value).__name__}")
    return value


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def broadcast_shape(ctx: InferCtx, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for i in range(max(len(a), len(b))):
        da = a[len(a) - 1 - i] if i < len(a) else 1
        db = b[len(b) - 1 - i] if i < len(b) else 1
        if da != db and 1 not in (da, db):
            raise ctx.fail(f"shapes {list(a)} and {list(b)} do not broadcast (axis -{i + 1}: {da} vs {db})")
        out.append(max(da, db))
    return tuple(reversed(out))


def same_dtype(ctx: InferCtx, *descs: BlobDesc) -> None:
    dtypes = {d.dtype for d in descs}
    if len(dtypes) > 1:
        raise ctx.fail(f"inputs have different dtypes ({', '.join(str(d) for d in descs)}); cast one with flow.cast")


def normalize_axes(ctx: InferCtx, axis: int | Sequence[int] | None, rank: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(rank))
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ctx.fail(f"axis {a} is out of range for a rank-{rank} blob")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise ctx.fail(f"axis {list(axes)} repeats an axis")
    return tuple(sorted(out))
