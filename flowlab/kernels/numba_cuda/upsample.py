"""CUDA kernels of ops/upsample_ops.py (upsample, upsample_grad), as OneFlow's upsample_kernel.cu: one thread
per output (dy) element; the gradient adds into dx atomically (zeroed first). The per-axis indices and weights
come from kernels/reference/upsample.py."""

from __future__ import annotations

from ..reference.upsample import params
from ..registry import KernelCtx, register_kernel
from ._cuda import const, cuda, current_launch, launch1
from .elementwise import filler


@cuda.jit
def _up(x, y, top, bot, lh, left, right, lw):
    start, step = cuda.grid(1), cuda.gridsize(1)
    _n, c_, oh, ow = y.shape
    for k in range(start, y.size, step):
        j = k % ow
        i = (k // ow) % oh
        c = (k // (ow * oh)) % c_
        n = k // (ow * oh * c_)
        tl, tr = x[n, c, top[i], left[j]], x[n, c, top[i], right[j]]
        bl, br = x[n, c, bot[i], left[j]], x[n, c, bot[i], right[j]]
        t = tl + (tr - tl) * lw[j]
        b = bl + (br - bl) * lw[j]
        y[n, c, i, j] = t + (b - t) * lh[i]


@cuda.jit
def _up_grad(dy, dx, top, bot, lh, left, right, lw):
    start, step = cuda.grid(1), cuda.gridsize(1)
    _n, c_, oh, ow = dy.shape
    for k in range(start, dy.size, step):
        j = k % ow
        i = (k // ow) % oh
        c = (k // (ow * oh)) % c_
        n = k // (ow * oh * c_)
        d = dy[n, c, i, j]
        db = lh[i] * d
        dt = d - db
        cuda.atomic.add(dx, (n, c, bot[i], left[j]), (1 - lw[j]) * db)
        cuda.atomic.add(dx, (n, c, bot[i], right[j]), lw[j] * db)
        cuda.atomic.add(dx, (n, c, top[i], left[j]), (1 - lw[j]) * dt)
        cuda.atomic.add(dx, (n, c, top[i], right[j]), lw[j] * dt)


def _device_params(ctx: KernelCtx, x_shape, y_shape) -> tuple:
    dt = ctx.out_descs[0].dtype.np
    top, bot, lh, left, right, lw = params(ctx, x_shape, y_shape)
    return tuple(const(a) for a in (top, bot, lh.astype(dt), left, right, lw.astype(dt)))


@register_kernel("upsample", "numba", "gpu")
def _upsample(ctx: KernelCtx):
    p, threads = _device_params(ctx, ctx.in_descs[0].shape, ctx.out_descs[0].shape), current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_up, outs[0].size, threads, stream, ins[0], outs[0], *p)

    return run


@register_kernel("upsample_grad", "numba", "gpu")
def _upsample_grad(ctx: KernelCtx):
    p, threads = _device_params(ctx, ctx.in_descs[1].shape, ctx.in_descs[0].shape), current_launch().threads
    zero = filler(ctx.out_descs[0].dtype.np, 0)

    def run(ins, outs, stream=0):
        zero(outs[0].reshape(-1), stream)
        launch1(_up_grad, ins[0].size, threads, stream, ins[0], outs[0], *p)

    return run
