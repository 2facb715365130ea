"""Numba CPU kernels: conv2d by im2col + BLAS (gather/scatter loops over precomputed indices), pooling by
direct window loops."""

from __future__ import annotations

import numpy as np

from ..reference.cnn import conv_geometry, dropout_stream
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit
from .nn import _dot


@njit
def _pad_into(x, xp, pt, pl):
    xp[...] = 0
    for a in range(x.shape[0]):
        for b in range(x.shape[1]):
            for i in range(x.shape[2]):
                for j in range(x.shape[3]):
                    xp[a, b, i + pt, j + pl] = x[a, b, i, j]


@njit
def _gather(flat, idx, cols):
    for k in range(idx.shape[0]):
        for p in range(idx.shape[1]):
            cols[k, p] = flat[idx[k, p]]


@njit
def _scatter_add(dcols, idx, flat):
    for k in range(idx.shape[0]):
        for p in range(idx.shape[1]):
            flat[idx[k, p]] += dcols[k, p]


@njit
def _crop_into(xp, x, pt, pl):
    for a in range(x.shape[0]):
        for b in range(x.shape[1]):
            for i in range(x.shape[2]):
                for j in range(x.shape[3]):
                    x[a, b, i, j] = xp[a, b, i + pt, j + pl]


class _Conv:
    """Buffers and geometry of one conv task, made once when the runtime is built."""

    def __init__(self, ctx: KernelCtx, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                 out_hw: tuple[int, ...]) -> None:
        geo = conv_geometry(ctx, x_shape, w_shape, out_hw)
        dtype = ctx.in_descs[0].dtype.np
        self.idx, self.groups, (self.pt, _pb, self.pl, _pr) = geo["idx"], geo["groups"], geo["pads"]
        self.xp = np.zeros(geo["padded"], dtype)
        self.cols = np.zeros(geo["idx"].shape, dtype)
        self.og = w_shape[0] // self.groups
        self.kg = self.cols.shape[0] // self.groups


@register_kernel("conv2d", "numba")
def _conv(ctx: KernelCtx) -> KernelFn:
    c = _Conv(ctx, ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.out_descs[0].shape[2:])

    def kernel(ins, outs):
        x, w = ins
        out = outs[0].reshape(x.shape[0], w.shape[0], -1)
        w2 = w.reshape(w.shape[0], -1)
        _pad_into(x, c.xp, c.pt, c.pl)
        for n in range(x.shape[0]):
            _gather(c.xp[n].reshape(-1), c.idx, c.cols)
            for g in range(c.groups):
                _dot(w2[g * c.og:(g + 1) * c.og], c.cols[g * c.kg:(g + 1) * c.kg], out[n, g * c.og:(g + 1) * c.og])

    return kernel


@register_kernel("conv2d_data_grad", "numba")
def _conv_data_grad(ctx: KernelCtx) -> KernelFn:
    c = _Conv(ctx, ctx.in_descs[2].shape, ctx.in_descs[1].shape, ctx.in_descs[0].shape[2:])

    def kernel(ins, outs):
        dy, w = ins[0], ins[1]
        dy3 = dy.reshape(dy.shape[0], dy.shape[1], -1)
        w2 = w.reshape(w.shape[0], -1)
        c.xp[...] = 0
        for n in range(dy.shape[0]):
            for g in range(c.groups):
                _dot(w2[g * c.og:(g + 1) * c.og].T, dy3[n, g * c.og:(g + 1) * c.og], c.cols[g * c.kg:(g + 1) * c.kg])
            _scatter_add(c.cols, c.idx, c.xp[n].reshape(-1))
        _crop_into(c.xp, outs[0], c.pt, c.pl)

    return kernel


@register_kernel("conv2d_filter_grad", "numba")
def _conv_filter_grad(ctx: KernelCtx) -> KernelFn:
    c = _Conv(ctx, ctx.in_descs[1].shape, ctx.in_descs[2].shape, ctx.in_descs[0].shape[2:])

    def kernel(ins, outs):
        dy, x = ins[0], ins[1]
        dy3 = dy.reshape(dy.shape[0], dy.shape[1], -1)
        dw = outs[0].reshape(outs[0].shape[0], -1)
        dw[...] = 0
        part = np.empty((c.og, c.kg), dw.dtype)
        _pad_into(x, c.xp, c.pt, c.pl)
        for n in range(x.shape[0]):
            _gather(c.xp[n].reshape(-1), c.idx, c.cols)
            for g in range(c.groups):
                _dot(dy3[n, g * c.og:(g + 1) * c.og], c.cols[g * c.kg:(g + 1) * c.kg].T, part)
                dw[g * c.og:(g + 1) * c.og] += part

    return kernel


@njit
def _pool(x, y, kh, kw, sh, sw, pt, pl, is_max):
    h, w = x.shape[2], x.shape[3]
    for a in range(x.shape[0]):
        for b in range(x.shape[1]):
            for oi in range(y.shape[2]):
                for oj in range(y.shape[3]):
                    acc, count = -np.inf if is_max else 0.0, 0
                    for ki in range(kh):
                        i = oi * sh + ki - pt
                        for kj in range(kw):
                            j = oj * sw + kj - pl
                            if 0 <= i < h and 0 <= j < w:
                                v = x[a, b, i, j]
                                count += 1
                                if is_max:
                                    if v > acc or v != v or count == 1:  # NaN wins, as np.max
                                        acc = v
                                else:
                                    acc += v
                    y[a, b, oi, oj] = acc if is_max else acc / count


@njit
def _pool_grad(x, dy, dx, kh, kw, sh, sw, pt, pl, is_max):
    h, w = x.shape[2], x.shape[3]
    dx[...] = 0
    for a in range(x.shape[0]):
        for b in range(x.shape[1]):
            for oi in range(dy.shape[2]):
                for oj in range(dy.shape[3]):
                    best, bi, bj, count = -np.inf, -1, -1, 0
                    for ki in range(kh):
                        i = oi * sh + ki - pt
                        for kj in range(kw):
                            j = oj * sw + kj - pl
                            if 0 <= i < h and 0 <= j < w:
                                count += 1
                                v = x[a, b, i, j]
                                # the first maximum (or first NaN, as np.argmax) takes the gradient
                                if count == 1 or (best == best and (v > best or v != v)):
                                    best, bi, bj = v, i, j
                    g = dy[a, b, oi, oj]
                    if is_max:
                        dx[a, b, bi, bj] += g
                    else:
                        for ki in range(kh):
                            i = oi * sh + ki - pt
                            for kj in range(kw):
                                j = oj * sw + kj - pl
                                if 0 <= i < h and 0 <= j < w:
                                    dx[a, b, i, j] += g / count


def _pool_args(ctx: KernelCtx) -> tuple[int, ...]:
    (kh, kw), (sh, sw), (pt, _pb, pl, _pr) = ctx.attrs["ksize"], ctx.attrs["strides"], ctx.attrs["pads"]
    return kh, kw, sh, sw, pt, pl


def _pool_factory(is_max: bool):
    def factory(ctx: KernelCtx) -> KernelFn:
        args = _pool_args(ctx)
        return lambda ins, outs: _pool(ins[0], outs[0], *args, is_max)

    return factory


def _pool_grad_factory(is_max: bool):
    def factory(ctx: KernelCtx) -> KernelFn:
        args = _pool_args(ctx)
        return lambda ins, outs: _pool_grad(ins[0], ins[2], outs[0], *args, is_max)

    return factory


register_kernel("max_pool2d", "numba")(_pool_factory(True))
register_kernel("avg_pool2d", "numba")(_pool_factory(False))
register_kernel("max_pool2d_grad", "numba")(_pool_grad_factory(True))
register_kernel("avg_pool2d_grad", "numba")(_pool_grad_factory(False))


@njit
def _dropout(x, r, rate, scale, y, mask):
    x, r, y, mask = x.ravel(), r.ravel(), y.ravel(), mask.ravel()
    for i in range(y.size):
        mask[i] = scale if r[i] >= rate else 0.0
        y[i] = x[i] * mask[i]


@njit
def _times(a, b, out):
    a, b, out = a.ravel(), b.ravel(), out.ravel()
    for i in range(out.size):
        out[i] = a[i] * b[i]


@register_kernel("dropout", "numba")
def _dropout_f(ctx: KernelCtx) -> KernelFn:
    rate, rng = ctx.attrs["rate"], dropout_stream(ctx)
    scale = 1.0 / (1.0 - rate)
    uniform = np.empty(ctx.out_descs[1].shape)  # the draws, float64 as the reference's rng.random(shape)

    def kernel(ins, outs):
        rng.random(out=uniform)  # a new mask each run, from the seeded stream
        _dropout(ins[0], uniform, rate, scale, outs[0], outs[1])

    return kernel


@register_kernel("dropout_grad", "numba")
def _dropout_grad_f(ctx: KernelCtx) -> KernelFn:
    return lambda ins, outs: _times(ins[0], ins[1], outs[0])
