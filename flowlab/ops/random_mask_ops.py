"""OneFlow v0.3.4's ``flow.nn.random_mask_like`` (``nn_ops.py``; op ``random_mask_like``): an int8 mask of the
``like`` blob's shape, 0 with probability ``rate`` and 1 otherwise (the mask dropout multiplies by). Its draws
come from the op's seeded host stream, as flowlab's dropout's (docs/deviations.md: not OneFlow's generator);
without a seed the seed is derived from the op's name, so a job draws the same masks each session."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op, current_builder
from ..ir import BlobDesc
from ..ir.dtype import int8
from ._common import require_blob
from .registry import ANY, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import elementwise


def _infer(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    if not 0.0 <= ctx.attrs["rate"] < 1.0:
        raise ctx.fail(f"random_mask_like's rate must be in [0, 1); got {ctx.attrs['rate']}")
    return {"out": [BlobDesc(ctx.input("like").shape, int8)]}


# OneFlow's signatures split like and out on the same axis; a split mask is drawn per device (not the slices of
# one blob's mask), so the SBP exactness suite lists the op with the other random ones
register_op(OpDef("random_mask_like", ("like",), ("out",), _infer, {"rate": REQUIRED, "seed": 0},
                  dtypes={"like": ANY}, sbp=elementwise("like")))


def random_mask_like(like: LazyBlob, rate: float, seed: int | None = None, noise_shape: Sequence[int] | None = None,
                     name: str | None = None) -> LazyBlob:
    """1 where an element is kept, 0 where dropped (probability ``rate``), int8 of ``like``'s shape."""
    require_blob(like, "random_mask_like's like")
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"random_mask_like: rate must be in [0, 1); got {rate!r}")
    if noise_shape is not None:
        raise NotImplementedError("random_mask_like: noise_shape is not supported (OneFlow v0.3.4 asserts it too)")
    builder = current_builder()
    op_name = scope.scoped_name(name) if name is not None else builder.unique_name("random_mask_like")
    if seed is None:  # OneFlow draws a random seed; one from the op name keeps runs repeatable
        seed = zlib.crc32(op_name.encode())
    return add_op("random_mask_like", {"like": [like]}, {"rate": float(rate), "seed": int(seed)}, op_name,
                  scoped=False)[0]


__all__ = ["random_mask_like"]
