"""``flow.slice_update(x, update, slice_tup_list)``: OneFlow v0.3.4's slice_update op (slice_op.cpp; the user
function in array_ops.py): ``x`` with the slice ``slice_tup_list`` names replaced by ``update``, per axis a
(start, stop, step) with slice_v2's semantics (negative steps too). Gradients as OneFlow's: ``update`` gets the
slice of dy, ``x`` gets dy with the slice zeroed (slice_update of dy by zeros). SBP: split on the axes the slice
takes whole, or all P (the op is linear in x and update together)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import OpInferError
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..frontend.location import user_location
from ..ir import BlobDesc
from ._common import require_blob
from .registry import ARITHMETIC, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import slice_rule


def _infer_slice_update(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, update, spec = ctx.input("x"), ctx.input("update"), ctx.attrs["slice_tup_list"]
    if len(spec) != len(x.shape):
        raise ctx.fail(f"slice_tup_list needs one (start, stop, step) per axis of {x}; got {len(spec)}")
    if any(s[2] == 0 for s in spec):
        raise ctx.fail(f"slice steps must not be 0; got {list(spec)}")
    want = tuple(len(range(*slice(*s).indices(d))) for s, d in zip(spec, x.shape))
    if update.shape != want:
        raise ctx.fail(f"update {update} must have the shape of the slice {list(spec)} of x {x}: {list(want)}")
    if update.dtype != x.dtype:
        raise ctx.fail(f"update ({update.dtype.name}) and x ({x.dtype.name}) must have the same dtype")
    return {"y": [x]}


def _grad_slice_update(ctx: Any) -> None:
    spec, dy = ctx.attrs["slice_tup_list"], ctx.dy("y")
    ctx.set_dx("update", add_op("slice", {"x": [dy]}, {"slice_tup_list": spec})[0])
    zeros = add_op("zeros_like", {"like": [ctx.x("update")]})[0]  # the replaced elements pass nothing to x
    ctx.set_dx("x", add_op("slice_update", {"x": [dy], "update": [zeros]}, {"slice_tup_list": spec})[0])


register_op(OpDef("slice_update", ("x", "update"), ("y",), _infer_slice_update, {"slice_tup_list": REQUIRED},
                  grad=_grad_slice_update, dtypes={"x": ARITHMETIC, "update": ARITHMETIC}, sbp=slice_rule("x")))


def slice_update(x: LazyBlob, update: LazyBlob, slice_tup_list: Sequence[Sequence[int | None]],
                 name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.slice_update``. A list shorter than x's rank leaves the remaining axes whole, as
    slice_v2's."""
    require_blob(x, "slice_update's x")
    require_blob(update, "slice_update's update")
    if not isinstance(slice_tup_list, (list, tuple)) or len(slice_tup_list) > len(x.shape):
        loc = user_location()
        raise OpInferError(f"{loc + ': ' if loc else ''}slice_update: slice_tup_list must be a list of at most "
                           f"{len(x.shape)} (start, stop, step) (one per axis of {x.blob_desc}); got "
                           f"{slice_tup_list!r}")
    spec = tuple(tuple(s) for s in slice_tup_list)
    spec += ((None, None, None),) * (len(x.shape) - len(spec))
    return add_op("slice_update", {"x": [x], "update": [update]}, {"slice_tup_list": spec}, name)[0]


__all__ = ["slice_update"]
