"""NumPy reference kernels of ops/upsample_ops.py (upsample, upsample_grad), as OneFlow's upsample_kernel.cu
computes them: per output row (column) a top (left) and bottom (right) source index and a lerp weight, from
the float32 inverse scale; "nearest" is the case top == bottom, lerp 0. ``axis_params`` is shared by every tier."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def axis_params(out_size: int, in_size: int, scale_attr: float, bilinear: bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, lerp) per output index, in OneFlow's float32 arithmetic (scale = 1 / the attr)."""
    scale = np.float32(1.0) / np.float32(scale_attr)
    o = np.arange(out_size, dtype=np.float32)
    if not bilinear:  # GetNearestInputIndex
        idx = np.clip(np.floor((o + np.float32(0.5)) * scale).astype(np.int64), 0, in_size - 1)
        return idx, idx.copy(), np.zeros(out_size, np.float32)
    src = (o + np.float32(0.5)) * scale - np.float32(0.5)  # GetBilinearParam
    lo = np.where(src > 0, np.floor(src), 0).astype(np.int64)
    hi = np.where(src < in_size - 1, np.ceil(src), in_size - 1).astype(np.int64)
    return lo, hi, (src - np.floor(src)).astype(np.float32)


def params(ctx: KernelCtx, x_shape: tuple[int, ...], y_shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    bilinear = ctx.attrs["interpolation"] == "bilinear"
    return (*axis_params(y_shape[2], x_shape[2], ctx.attrs["height_scale"], bilinear),
            *axis_params(y_shape[3], x_shape[3], ctx.attrs["width_scale"], bilinear))


@register_kernel("upsample", "reference")
def _upsample(ctx: KernelCtx) -> KernelFn:
    top, bot, lh, left, right, lw = params(ctx, ctx.in_descs[0].shape, ctx.out_descs[0].shape)

    def kernel(ins, outs):
        x = ins[0]
        wl, hl = lw.astype(x.dtype), lh[:, None].astype(x.dtype)
        t = x[:, :, top][..., left] + (x[:, :, top][..., right] - x[:, :, top][..., left]) * wl
        b = x[:, :, bot][..., left] + (x[:, :, bot][..., right] - x[:, :, bot][..., left]) * wl
        outs[0][...] = t + (b - t) * hl

    return kernel


@register_kernel("upsample_grad", "reference")
def _upsample_grad(ctx: KernelCtx) -> KernelFn:
    top, bot, lh, left, right, lw = params(ctx, ctx.in_descs[1].shape, ctx.in_descs[0].shape)
    rows, cols = np.meshgrid(np.arange(top.size), np.arange(left.size), indexing="ij")

    def kernel(ins, outs):
        dy, dx = ins[0], outs[0]
        wl, hl = lw.astype(dy.dtype)[cols], lh.astype(dy.dtype)[rows]
        dbottom = hl * dy
        dtop = dy - dbottom
        dx[...] = 0
        for r, c, v in ((bot[rows], left[cols], (1 - wl) * dbottom), (bot[rows], right[cols], wl * dbottom),
                        (top[rows], left[cols], (1 - wl) * dtop), (top[rows], right[cols], wl * dtop)):
            np.add.at(dx, (slice(None), slice(None), r, c), v)

    return kernel
