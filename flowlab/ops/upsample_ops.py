"""OneFlow v0.3.4's ``flow.layers.upsample_2d`` (``oneflow/python/ops/layers.py``) and its ``upsample`` op
(``user/ops/upsample_op.cpp``, kernels ``user/kernels/upsample_kernel.cu``): an NCHW blob scaled by
(height_scale, width_scale), "nearest" or "bilinear" (half-pixel centres, edges clamped), NHWC through
transposes as OneFlow's function does. Its gradient op ``upsample_grad`` scatters dy back with the same weights.
OneFlow's SBP: every blob S(0)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.sbp import split
from ._common import require_blob
from .array_ops import transpose
from .registry import FLOATING, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import SbpCtx, Signature

_ATTRS = {"height_scale": REQUIRED, "width_scale": REQUIRED, "data_format": "channels_first",
          "interpolation": "nearest"}


def _check(ctx: InferCtx, x: BlobDesc) -> None:
    if ctx.attrs["data_format"] != "channels_first" or len(x.shape) != 4:
        raise ctx.fail(f"upsample takes a 4-D channels_first (NCHW) blob; got {x} ({ctx.attrs['data_format']})")
    if ctx.attrs["interpolation"] not in ("nearest", "bilinear"):
        raise ctx.fail(f'interpolation must be "nearest" or "bilinear"; got {ctx.attrs["interpolation"]!r}')


def _infer(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    _check(ctx, x)
    n, c, h, w = x.shape
    oh, ow = int(h * ctx.attrs["height_scale"]), int(w * ctx.attrs["width_scale"])
    if oh <= 0 or ow <= 0:
        raise ctx.fail(f"scales ({ctx.attrs['height_scale']}, {ctx.attrs['width_scale']}) leave no output of {x}")
    return {"y": [BlobDesc((n, c, oh, ow), x.dtype)]}


def _infer_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    dy, x = ctx.input("dy"), ctx.input("x")
    _check(ctx, x)
    want = (x.shape[0], x.shape[1], int(x.shape[2] * ctx.attrs["height_scale"]),
            int(x.shape[3] * ctx.attrs["width_scale"]))
    if dy.shape != want:
        raise ctx.fail(f"dy {dy} must have the upsampled shape {list(want)} of {x}")
    return {"dx": [BlobDesc(x.shape, dy.dtype)]}


def _grad(ctx: Any) -> None:
    ctx.set_dx("x", add_op("upsample_grad", {"dy": [ctx.dy("y")], "x": [ctx.x("x")]}, dict(ctx.attrs))[0])


def _batch_split(ctx: SbpCtx) -> list[Signature]:
    return [ctx.make({arg: split(0) for arg in ctx.arg_bns})]


register_op(OpDef("upsample", ("x",), ("y",), _infer, dict(_ATTRS), grad=_grad, dtypes={"x": FLOATING},
                  sbp=_batch_split))
register_op(OpDef("upsample_grad", ("dy", "x"), ("dx",), _infer_grad, dict(_ATTRS),
                  dtypes=dtypes_of(("dy", "x"), FLOATING), sbp=_batch_split))


def upsample_2d(x: LazyBlob, size: int | Sequence[int] = (2, 2), data_format: str = "NCHW",
                interpolation: str = "nearest", name: str = "Upsample2D") -> LazyBlob:
    """Scale H by size[0] and W by size[1] (an int: both), "nearest" or "bilinear"; NCHW or NHWC."""
    require_blob(x, "upsample_2d's input")
    if isinstance(size, int):
        hs = ws = size
    elif isinstance(size, (list, tuple)) and len(size) == 2:
        hs, ws = size
    else:
        raise ValueError(f"upsample_2d: size must be an int or a pair; got {size!r}")
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError('interpolation must be "nearest" or "bilinear".')
    if data_format.upper() not in ("NCHW", "NHWC"):
        raise ValueError('data_format must be "NHWC" or "NCHW".')
    nhwc = data_format.upper() == "NHWC"
    if nhwc:
        x = transpose(x, [0, 3, 1, 2])
    attrs = {"height_scale": float(hs), "width_scale": float(ws), "data_format": "channels_first",
             "interpolation": interpolation}
    y = add_op("upsample", {"x": [x]}, attrs, name)[0]
    return transpose(y, [0, 2, 3, 1]) if nhwc else y


__all__ = ["upsample_2d"]
