"""``flow.experimental.unique_with_counts(x, out_idx=flow.int32)``: OneFlow v0.3.4's unique_with_counts op
(``core/operator/unique_with_counts_op.cpp``, ``python/experimental/unique_op.py``). Every output is static: y, idx
and count have x's length (1-D x), num_unique is (1,); the first num_unique entries of y are x's distinct values,
``y[idx] == x``, count[i] how often y[i] occurs. flowlab orders y by first appearance (OneFlow's CPU kernel's
hash order is unspecified; its test sorts) and zero-fills the entries past num_unique (OneFlow leaves them as they
were)."""

from __future__ import annotations

from ..errors import OpInferError
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..frontend.location import user_location
from ..ir import BlobDesc
from ..ir.dtype import DType, int32, int64
from ._common import require_blob
from .registry import ARITHMETIC, InferCtx, OpDef, register_op
from .sbp_rules import broadcast_only

INDEX_OUT = (int32, int64)  # OneFlow's IsIndexDataType


def _infer_unique(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, idx = ctx.input("x"), ctx.attrs["out_idx"]
    if len(x.shape) != 1:
        raise ctx.fail(f"x must be 1-D (OneFlow CHECKs it); got {x}")
    if idx not in INDEX_OUT:
        raise ctx.fail(f"out_idx must be flow.int32 or flow.int64; got {idx!r}")
    return {"y": [x], "idx": [BlobDesc(x.shape, idx)], "count": [BlobDesc(x.shape, idx)],
            "num_unique": [BlobDesc((1,), idx)]}


register_op(OpDef("unique_with_counts", ("x",), ("y", "idx", "count", "num_unique"), _infer_unique,
                  {"out_idx": int32}, dtypes={"x": tuple(t for t in ARITHMETIC if t.name != "float16")},
                  sbp=broadcast_only))


def unique_with_counts(x: LazyBlob, out_idx: DType = int32, name: str | None = None
                       ) -> tuple[LazyBlob, LazyBlob, LazyBlob, LazyBlob]:
    """(y, idx, count, num_unique) of the 1-D blob ``x``."""
    require_blob(x, "unique_with_counts' x")
    if not isinstance(out_idx, DType):
        loc = user_location()
        raise OpInferError(f"{loc + ': ' if loc else ''}unique_with_counts: out_idx takes flow.int32 or flow.int64; "
                           f"got {out_idx!r}")
    y, idx, count, num = add_op("unique_with_counts", {"x": [x]}, {"out_idx": out_idx},
                                name=name if name is not None else _unique_name())
    return y, idx, count, num


def _unique_name() -> str:
    from ..frontend.builder import current_builder

    builder, i = current_builder(), 0
    while builder.has_op(f"UniqueWithCounts_{i}"):
        i += 1
    return f"UniqueWithCounts_{i}"


__all__ = ["unique_with_counts"]
