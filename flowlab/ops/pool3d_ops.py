"""OneFlow v0.3.4's 3-D pooling, ``flow.nn.max_pool3d`` and ``avg_pool3d`` (``nn_ops.py``; ops ``max_pool_3d`` /
``avg_pool_3d`` there, ``max_pool3d`` / ``avg_pool3d`` here as flowlab's 2-D ones are named), with the 2-D ops'
semantics in one more axis: windows over the NCDHW input padded by ``pads`` (front, back, top, bottom, left,
right); padded cells are left out of the maximum and of the average's count; the maximum's gradient goes to the
first maximum of its window. NDHWC through transposes. SBP: N or C split."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ._common import require_blob
from .array_ops import transpose
from .cnn_ops import out_size
from .conv_nd_ops import _axis_pads, _channels_first_padding, _layout, _seq
from .registry import FLOATING, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import batch_and

_POOL = {"ksize": REQUIRED, "strides": REQUIRED, "pads": REQUIRED}


def pool3d_out(ctx: InferCtx, shape: tuple[int, ...]) -> tuple[int, int, int]:
    k, s, p = ctx.attrs["ksize"], ctx.attrs["strides"], ctx.attrs["pads"]
    return tuple(out_size(shape[2 + i], k[i], s[i], 1, p[2 * i], p[2 * i + 1]) for i in range(3))


def _infer(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    if len(x.shape) != 5:
        raise ctx.fail(f"3-D pooling needs an NCDHW input; got {x}")
    k, s, p = ctx.attrs["ksize"], ctx.attrs["strides"], ctx.attrs["pads"]
    out = pool3d_out(ctx, x.shape)
    if min(out) <= 0:
        raise ctx.fail(f"a {'x'.join(map(str, k))} window does not fit the padded input {x}")
    for i in range(3):
        if p[2 * i] >= k[i] or (out[i] - 1) * s[i] - p[2 * i] >= x.shape[2 + i]:
            raise ctx.fail(f"padding {list(p)} leaves windows of {list(k)} (strides {list(s)}) over only padding "
                           f"of {x}")
    return {"y": [BlobDesc((*x.shape[:2], *out), x.dtype)]}


def _infer_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, y, dy = ctx.input("x"), ctx.input("y"), ctx.input("dy")
    want = (*x.shape[:2], *pool3d_out(ctx, x.shape))
    if dy.shape != want or y.shape != want:
        raise ctx.fail(f"y {y} and dy {dy} must have the pooled shape {list(want)} of {x}")
    return {"dx": [x]}


def _grad(ctx: Any) -> None:
    ins = {"x": [ctx.x("x")], "y": [ctx.y("y")], "dy": [ctx.dy("y")]}
    ctx.set_dx("x", add_op(f"{ctx.op.op_type}_grad", ins, dict(ctx.attrs))[0])


for _t in ("max_pool3d", "avg_pool3d"):
    register_op(OpDef(_t, ("x",), ("y",), _infer, dict(_POOL), grad=_grad, dtypes={"x": FLOATING},
                      sbp=batch_and((0, 1))))
    register_op(OpDef(f"{_t}_grad", ("x", "y", "dy"), ("dx",), _infer_grad, dict(_POOL),
                      dtypes=dtypes_of(("x", "y", "dy"), FLOATING), sbp=batch_and((0, 1))))


def _pool3d(kind: str, input: LazyBlob, ksize: Any, strides: Any, padding: Any, data_format: str,
            ceil_mode: bool, name: str | None) -> LazyBlob:
    require_blob(input, f"{kind}'s input")
    if len(input.shape) != 5:
        raise ValueError(f"{kind} needs a 5-D input; got {input.blob_desc}")
    if ceil_mode:
        raise NotImplementedError(f"{kind}: ceil_mode=True is not supported in flowlab (floor division, "
                                  "OneFlow's default)")
    last = _layout(data_format, 3)
    if last:
        input = transpose(input, [0, 4, 1, 2, 3])
    k, s = _seq(ksize, 3, "ksize"), _seq(strides, 3, "strides")
    mode = padding
    if isinstance(padding, str) and padding.upper() == "SAME":
        mode = "SAME_LOWER"  # OneFlow's calc_pool_padding
    pads = _axis_pads(_channels_first_padding(mode, 3, last), input.shape[2:], k, s, (1, 1, 1))
    attrs = {"ksize": k, "strides": s, "pads": tuple(p for pair in pads for p in pair)}
    y = add_op(kind, {"x": [input]}, attrs, name)[0]
    return transpose(y, [0, 2, 3, 4, 1]) if last else y


def max_pool3d(input: LazyBlob, ksize: int | Sequence[int], strides: int | Sequence[int], padding: Any,
               data_format: str = "NCDHW", ceil_mode: bool = False, name: str | None = None) -> LazyBlob:
    """The maximum of each window's cells inside the input."""
    return _pool3d("max_pool3d", input, ksize, strides, padding, data_format, ceil_mode, name)


def avg_pool3d(input: LazyBlob, ksize: int | Sequence[int], strides: int | Sequence[int], padding: Any,
               data_format: str = "NCDHW", ceil_mode: bool = False, name: str | None = None) -> LazyBlob:
    """The average of each window's cells inside the input (padding is not counted, as OneFlow and TF)."""
    return _pool3d("avg_pool3d", input, ksize, strides, padding, data_format, ceil_mode, name)


__all__ = ["avg_pool3d", "max_pool3d"]
