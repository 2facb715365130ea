"""NumPy reference kernels of ops/pool3d_ops.py (max_pool3d, avg_pool3d and their gradients), as the 2-D ones in
cnn.py with a third axis: every window as indices into the padded, flattened (D, H, W) volume of each plane,
padded cells masked out of the maximum and of the average's count; a maximum's gradient goes to the first
maximum (or first NaN) of its window."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def pool3_geometry(ctx: KernelCtx, shape: tuple[int, ...], out: tuple[int, ...]) -> dict:
    n, c, *size = shape
    k, s, p = ctx.attrs["ksize"], ctx.attrs["strides"], ctx.attrs["pads"]
    padded = [size[i] + p[2 * i] + p[2 * i + 1] for i in range(3)]
    strides = (padded[1] * padded[2], padded[2], 1)
    taps = np.meshgrid(*[np.arange(k[i]) for i in range(3)], indexing="ij")
    outs = np.meshgrid(*[np.arange(out[i]) for i in range(3)], indexing="ij")
    idx = (sum(taps[i] * strides[i] for i in range(3)).reshape(-1, 1)
           + sum(outs[i] * s[i] * strides[i] for i in range(3)).reshape(1, -1))
    pad_width = [(p[2 * i], p[2 * i + 1]) for i in range(3)]
    valid = np.pad(np.ones(size), pad_width).reshape(-1)[idx]
    return {"idx": idx, "valid": valid, "count": valid.sum(0), "planes": n * c, "padded": padded,
            "pad_width": [(0, 0), (0, 0), *pad_width], "size": size}


def _windows(x: np.ndarray, geo: dict) -> np.ndarray:
    return np.pad(x, geo["pad_width"]).reshape(geo["planes"], -1)[:, geo["idx"]]  # (planes, taps, outputs)


def _crop(dxp: np.ndarray, geo: dict, shape: tuple[int, ...]) -> np.ndarray:
    (f, _), (t, _), (left, _) = geo["pad_width"][2:]
    d, h, w = geo["size"]
    return dxp.reshape(*shape[:2], *geo["padded"])[:, :, f:f + d, t:t + h, left:left + w]


@register_kernel("max_pool3d", "reference")
def _max(ctx: KernelCtx) -> KernelFn:
    geo = pool3_geometry(ctx, ctx.in_descs[0].shape, ctx.out_descs[0].shape[2:])

    def kernel(ins, outs):
        outs[0][...] = np.where(geo["valid"] > 0, _windows(ins[0], geo), -np.inf).max(1).reshape(outs[0].shape)

    return kernel


@register_kernel("avg_pool3d", "reference")
def _avg(ctx: KernelCtx) -> KernelFn:
    geo = pool3_geometry(ctx, ctx.in_descs[0].shape, ctx.out_descs[0].shape[2:])

    def kernel(ins, outs):
        outs[0][...] = (_windows(ins[0], geo).sum(1) / geo["count"]).reshape(outs[0].shape)

    return kernel


@register_kernel("max_pool3d_grad", "reference")
def _max_grad(ctx: KernelCtx) -> KernelFn:
    geo = pool3_geometry(ctx, ctx.in_descs[0].shape, ctx.in_descs[2].shape[2:])

    def kernel(ins, outs):
        x, _y, dy = ins
        valid = geo["valid"] > 0
        win = np.where(valid, _windows(x, geo), -np.inf)
        top = win.max(1, keepdims=True)
        first = (((win == top) | np.isnan(win)) & valid).argmax(1)
        pos = geo["idx"][first, np.arange(geo["idx"].shape[1])]
        dxp = np.zeros((geo["planes"], int(np.prod(geo["padded"]))), dy.dtype)
        np.add.at(dxp, (np.arange(geo["planes"])[:, None], pos), dy.reshape(geo["planes"], -1))
        outs[0][...] = _crop(dxp, geo, x.shape)

    return kernel


@register_kernel("avg_pool3d_grad", "reference")
def _avg_grad(ctx: KernelCtx) -> KernelFn:
    geo = pool3_geometry(ctx, ctx.in_descs[0].shape, ctx.in_descs[2].shape[2:])

    def kernel(ins, outs):
        x, _y, dy = ins
        share = dy.reshape(geo["planes"], 1, -1) / geo["count"] * geo["valid"]
        dxp = np.zeros((geo["planes"], int(np.prod(geo["padded"]))), dy.dtype)
        np.add.at(dxp, (np.arange(geo["planes"])[:, None, None], geo["idx"][None]), share)
        outs[0][...] = _crop(dxp, geo, x.shape)

    return kernel
