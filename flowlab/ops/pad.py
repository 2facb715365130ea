"""Padding ops on NCHW blobs: reflection_pad2d (OneFlow v0.3.4's padding list), zero_pad2d (v0.4.0's).

Both ops carry the padding attr as ``[left, right, top, bottom]``; the user functions translate what the user
wrote into it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..frontend.location import user_location
from ..ir import BlobDesc
from .registry import ANY, ARITHMETIC, REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import batch_and


def normalize_padding(padding: int | Sequence[int]) -> tuple[int, int, int, int]:
    """An int pads all four sides; a 4-sequence is ``[left, right, top, bottom]``."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        pads = (padding,) * 4
    elif isinstance(padding, (list, tuple)) and len(padding) == 4 and all(isinstance(p, int) for p in padding):
        pads = tuple(padding)
    else:
        raise TypeError(f"padding must be an int or a list of 4 ints [left, right, top, bottom]; got {padding!r}")
    if any(p < 0 for p in pads):
        raise ValueError(f"padding must be non-negative; got {list(pads)}")
    return pads  # type: ignore[return-value]


def _infer_pad2d(ctx: InferCtx, reflect: bool) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    if len(x.shape) != 4:
        raise ctx.fail(f"expected a 4-D NCHW input; got shape {list(x.shape)}")
    left, right, top, bottom = ctx.attrs["padding"]
    n, c, h, w = x.shape
    if reflect and (max(left, right) >= w or max(top, bottom) >= h):
        axis = "width" if max(left, right) >= w else "height"
        raise ctx.fail(
            f"reflection padding must be smaller than the padded dimension: padding {list(ctx.attrs['padding'])} "
            f"(left, right, top, bottom) on H={h}, W={w} (the {axis} is padded too much)"
        )
    return {"y": [BlobDesc((n, c, h + top + bottom, w + left + right), x.dtype)]}


def _infer_pad2d_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    dy = ctx.input("dy")
    left, right, top, bottom = ctx.attrs["padding"]
    n, c, h, w = dy.shape
    return {"dx": [BlobDesc((n, c, h - top - bottom, w - left - right), dy.dtype)]}


def _grad_pad2d(ctx) -> None:
    grad_type = f"{ctx.op.op_type}_grad"
    ctx.set_dx("x", add_op(grad_type, {"dy": [ctx.dy("y")]}, {"padding": ctx.attrs["padding"]})[0])


_PAD = {"padding": REQUIRED}
register_op(OpDef("reflection_pad2d", ("x",), ("y",), lambda ctx: _infer_pad2d(ctx, True), _PAD, grad=_grad_pad2d,
                  dtypes={"x": ANY}, sbp=batch_and((0, 1))))
register_op(OpDef("zero_pad2d", ("x",), ("y",), lambda ctx: _infer_pad2d(ctx, False), _PAD, grad=_grad_pad2d,
                  dtypes={"x": ANY}, sbp=batch_and((0, 1))))
register_op(OpDef("reflection_pad2d_grad", ("dy",), ("dx",), _infer_pad2d_grad, _PAD, dtypes={"dy": ARITHMETIC},
                  sbp=batch_and((0, 1))))
register_op(OpDef("zero_pad2d_grad", ("dy",), ("dx",), _infer_pad2d_grad, _PAD, dtypes={"dy": ARITHMETIC},
                  sbp=batch_and((0, 1))))


def reflection_pad2d_padding(padding: int | Sequence[int]) -> tuple[int, int, int, int]:
    """OneFlow v0.3.4's reading of ``padding`` as ``[left, right, top, bottom]``: an int pads all four sides; a
    list of 4 pads the height by ``padding[2]`` and the width by ``padding[3]``, each on both sides (v0.3.4's
    ``ops/pad.py`` builds the op attr ``[0, 0, padding[2], padding[3]]``, one entry per NCHW axis).
    ``padding[0]`` and ``padding[1]`` are not used (a warning says so when they are not 0)."""
    where = user_location() or "?"
    if isinstance(padding, int) and not isinstance(padding, bool):
        top = left = padding
    elif isinstance(padding, (list, tuple)) and len(padding) == 4 and all(
            isinstance(p, int) and not isinstance(p, bool) for p in padding):
        top, left = padding[2], padding[3]
        if padding[0] or padding[1]:
            warnings.warn(
                f"{where}: reflection_pad2d(padding={list(padding)}): padding[0] and padding[1] are not used; "
                f"as in OneFlow v0.3.4, padding[2]={top} pads the height and padding[3]={left} the width, each on "
                "both sides (v0.4.0's [left, right, top, bottom] order is not this one)", UserWarning, stacklevel=3)
    else:
        raise TypeError(f"{where}: reflection_pad2d's padding must be an int or a list of 4 ints (one per NCHW axis; "
                        f"padding[2] pads the height, padding[3] the width); got {padding!r}")
    if top < 0 or left < 0:
        raise ValueError(f"{where}: reflection_pad2d's padding must be non-negative; got {padding!r}")
    return (left, left, top, top)  # the op's inference checks them against the input's H and W


def reflection_pad2d(x: LazyBlob, padding: int | Sequence[int], name: str | None = None) -> LazyBlob:
    """Pad the H and W axes of an NCHW blob by reflecting it at the border (the border is not repeated).

    ``padding`` as in OneFlow v0.3.4: an int pads every side; ``[_, _, h, w]`` pads the height by ``h`` and the
    width by ``w`` on both sides (see ``reflection_pad2d_padding``)."""
    return add_op("reflection_pad2d", {"x": [x]}, {"padding": reflection_pad2d_padding(padding)}, name)[0]


def zero_pad2d(x: LazyBlob, padding: int | Sequence[int], name: str | None = None) -> LazyBlob:
    """Pad the H and W axes of an NCHW blob with zeros."""
    return add_op("zero_pad2d", {"x": [x]}, {"padding": normalize_padding(padding)}, name)[0]
