"""Numba CPU kernels of ops/upsample_ops.py (upsample, upsample_grad); kernels/reference/upsample.py says what
they compute and makes the per-axis indices and weights they read."""

from __future__ import annotations

from ..reference.upsample import params
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _up(x, y, top, bot, lh, left, right, lw):
    for n in range(y.shape[0]):
        for c in range(y.shape[1]):
            for i in range(y.shape[2]):
                for j in range(y.shape[3]):
                    tl, tr = x[n, c, top[i], left[j]], x[n, c, top[i], right[j]]
                    bl, br = x[n, c, bot[i], left[j]], x[n, c, bot[i], right[j]]
                    t = tl + (tr - tl) * lw[j]
                    b = bl + (br - bl) * lw[j]
                    y[n, c, i, j] = t + (b - t) * lh[i]


@njit
def _up_grad(dy, dx, top, bot, lh, left, right, lw):
    dx[...] = 0
    for n in range(dy.shape[0]):
        for c in range(dy.shape[1]):
            for i in range(dy.shape[2]):
                for j in range(dy.shape[3]):
                    d = dy[n, c, i, j]
                    db = lh[i] * d
                    dt = d - db
                    dx[n, c, bot[i], left[j]] += (1 - lw[j]) * db
                    dx[n, c, bot[i], right[j]] += lw[j] * db
                    dx[n, c, top[i], left[j]] += (1 - lw[j]) * dt
                    dx[n, c, top[i], right[j]] += lw[j] * dt


def _typed(ctx: KernelCtx, x_shape, y_shape) -> tuple:
    dt = ctx.out_descs[0].dtype.np
    top, bot, lh, left, right, lw = params(ctx, x_shape, y_shape)
    return top, bot, lh.astype(dt), left, right, lw.astype(dt)  # weights in the blob's dtype: no mixed arithmetic


@register_kernel("upsample", "numba")
def _upsample(ctx: KernelCtx) -> KernelFn:
    p = _typed(ctx, ctx.in_descs[0].shape, ctx.out_descs[0].shape)
    return lambda ins, outs: _up(ins[0], outs[0], *p)


@register_kernel("upsample_grad", "numba")
def _upsample_grad(ctx: KernelCtx) -> KernelFn:
    p = _typed(ctx, ctx.in_descs[1].shape, ctx.in_descs[0].shape)
    return lambda ins, outs: _up_grad(ins[0], outs[0], *p)
