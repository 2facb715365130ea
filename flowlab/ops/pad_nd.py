"""``flow.pad``: OneFlow's N-d constant pad (its pad and pad_grad ops, ``oneflow/user/ops/pad_op.cpp``). Kept
apart from pad.py, which holds the 2-D reflection and zero pads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import OpInferError
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..frontend.location import user_location
from ..ir import BlobDesc
from ..ir.sbp import split
from ._common import require_blob
from .registry import ARITHMETIC, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import SbpCtx, Signature


def _paddings(ctx: InferCtx, rank: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    before, after = ctx.attrs["padding_before"], ctx.attrs["padding_after"]
    if len(before) != rank or len(after) != rank:
        raise ctx.fail(f"padding_before {list(before)} and padding_after {list(after)} need one entry per axis "
                       f"(rank {rank})")
    if any(p < 0 for p in (*before, *after)):
        raise ctx.fail(f"paddings must be non-negative; got before {list(before)}, after {list(after)}")
    return tuple(before), tuple(after)


def _infer_pad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    before, after = _paddings(ctx, len(x.shape))
    return {"y": [BlobDesc(tuple(d + b + a for d, b, a in zip(x.shape, before, after)), x.dtype)]}


def _infer_pad_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    dy = ctx.input("dy")
    before, after = _paddings(ctx, len(dy.shape))
    shape = tuple(d - b - a for d, b, a in zip(dy.shape, before, after))
    if any(d <= 0 for d in shape):
        raise ctx.fail(f"dy {dy} is no larger than its paddings (before {list(before)}, after {list(after)})")
    return {"dx": [BlobDesc(shape, dy.dtype)]}


def _unpadded_axes(data: str, out: str) -> Any:
    """pad_op.cpp: S(i) -> S(i) on each axis padded by nothing on either side."""

    def rule(ctx: SbpCtx) -> list[Signature]:
        before, after = ctx.attrs["padding_before"], ctx.attrs["padding_after"]
        return [ctx.make({data: split(i), out: split(i)}) for i in range(ctx.ndim(data))
                if before[i] == 0 and after[i] == 0]

    return rule


def _grad_pad(ctx: Any) -> None:
    attrs = {k: ctx.attrs[k] for k in ("padding_before", "padding_after", "floating_constant_value",
                                       "integral_constant_value")}
    ctx.set_dx("x", add_op("pad_grad", {"dy": [ctx.dy("y")]}, attrs)[0])


_ATTRS = {"padding_before": REQUIRED, "padding_after": REQUIRED, "floating_constant_value": 0.0,
          "integral_constant_value": 0}
register_op(OpDef("pad", ("x",), ("y",), _infer_pad, dict(_ATTRS), grad=_grad_pad, dtypes={"x": ARITHMETIC},
                  sbp=_unpadded_axes("x", "y")))
register_op(OpDef("pad_grad", ("dy",), ("dx",), _infer_pad_grad, dict(_ATTRS), dtypes={"dy": ARITHMETIC},
                  sbp=_unpadded_axes("dy", "dx")))


def pad(x: LazyBlob, paddings: Sequence[Sequence[int]], constant_value: int | float = 0,
        name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.pad``: ``paddings`` holds one ``(before, after)`` pair per axis of ``x``; the new elements
    are ``constant_value`` (converted to an int for an integer blob, as OneFlow's integral attr does)."""
    require_blob(x, "pad's input")
    loc = user_location()
    where = f"{loc}: " if loc else ""
    if not isinstance(paddings, (list, tuple)):
        raise OpInferError(f"{where}pad: paddings must be a tuple or a list of (before, after) pairs; got "
                           f"{paddings!r}")
    if len(paddings) != len(x.shape):
        raise OpInferError(f"{where}pad: paddings needs one (before, after) pair per axis of {x.blob_desc}; got "
                           f"{len(paddings)}: {list(paddings)}")
    for p in paddings:
        if not (isinstance(p, (list, tuple)) and len(p) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in p)):
            raise OpInferError(f"{where}pad: each entry of paddings must be a (before, after) pair of ints; got "
                               f"{p!r}")
    if isinstance(constant_value, bool) or not isinstance(constant_value, (int, float)):
        raise OpInferError(f"{where}pad: constant_value must be a number; got {constant_value!r}")
    floating = x.dtype.is_floating
    attrs = {"padding_before": tuple(int(p[0]) for p in paddings),
             "padding_after": tuple(int(p[1]) for p in paddings),
             "floating_constant_value": float(constant_value) if floating else 0.0,
             "integral_constant_value": 0 if floating else int(constant_value)}
    return add_op("pad", {"x": [x]}, attrs, name)[0]


__all__ = ["pad"]
