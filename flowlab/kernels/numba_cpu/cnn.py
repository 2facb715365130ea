"""Numba CPU kernels: pooling by direct window loops (the window bounds clipped once per output row and
column, no bounds test inside a window), dropout. Convolution is in conv.py."""

from __future__ import annotations

import numpy as np

from ..reference.cnn import dropout_stream
from ..registry import FusedCall, KernelCtx, KernelFn, fusable, register_kernel
from ._numba import njit


@njit
def _window(o, stride, pad, k, size):
    """The input range [lo, hi) of output position o's window, clipped to the input."""
    start = o * stride - pad
    return max(start, 0), max(min(start + k, size), max(start, 0))


@njit
def _pool(x3, y3, kh, kw, sh, sw, pt, pl, is_max):
    # x3, y3: (planes, h, w), (planes, oh, ow)
    h, w = x3.shape[1], x3.shape[2]
    for a in range(x3.shape[0]):
        plane = x3[a]
        for oi in range(y3.shape[1]):
            i_lo, i_hi = _window(oi, sh, pt, kh, h)
            for oj in range(y3.shape[2]):
                j_lo, j_hi = _window(oj, sw, pl, kw, w)
                count = (i_hi - i_lo) * (j_hi - j_lo)
                if is_max:
                    acc = -np.inf
                    for i in range(i_lo, i_hi):
                        for j in range(j_lo, j_hi):
                            v = plane[i, j]
                            if v > acc or v != v:  # NaN wins, as np.max; a later NaN keeps it NaN
                                acc = v
                    y3[a, oi, oj] = acc
                else:
                    acc = 0.0
                    for i in range(i_lo, i_hi):
                        for j in range(j_lo, j_hi):
                            acc += plane[i, j]
                    y3[a, oi, oj] = acc / count


@njit
def _pool_grad(x3, dy3, dx3, kh, kw, sh, sw, pt, pl, is_max):
    h, w = x3.shape[1], x3.shape[2]
    dx3[...] = 0
    for a in range(x3.shape[0]):
        plane = x3[a]
        for oi in range(dy3.shape[1]):
            i_lo, i_hi = _window(oi, sh, pt, kh, h)
            for oj in range(dy3.shape[2]):
                j_lo, j_hi = _window(oj, sw, pl, kw, w)
                count = (i_hi - i_lo) * (j_hi - j_lo)
                g = dy3[a, oi, oj]
                if is_max:
                    if count == 0:
                        continue
                    best, bi, bj = plane[i_lo, j_lo], i_lo, j_lo
                    for i in range(i_lo, i_hi):
                        for j in range(j_lo, j_hi):
                            v = plane[i, j]
                            # the first maximum (or first NaN, as np.argmax) takes the gradient
                            if best == best and (v > best or v != v):
                                best, bi, bj = v, i, j
                    dx3[a, bi, bj] += g
                else:
                    share = g / count
                    for i in range(i_lo, i_hi):
                        for j in range(j_lo, j_hi):
                            dx3[a, i, j] += share


@njit
def _max_pool_2x2(x3, y3):
    # 2x2 windows at stride 2 that all lie inside x (LeNet's pools): four loads, no window loops, which at
    # 2x2 cost more than the comparisons (measured 12-20 ns an output against 2-3 here)
    for a in range(x3.shape[0]):
        for oi in range(y3.shape[1]):
            r0, r1 = x3[a, 2 * oi], x3[a, 2 * oi + 1]
            for oj in range(y3.shape[2]):
                m = r0[2 * oj]
                for v in (r0[2 * oj + 1], r1[2 * oj], r1[2 * oj + 1]):
                    if v > m or v != v:  # NaN wins, as np.max
                        m = v
                y3[a, oi, oj] = m


@njit
def _max_pool_2x2_grad(x3, dy3, dx3):
    # the windows do not overlap: each writes its four dx values (rows or columns left over stay zero)
    if 2 * dy3.shape[1] < x3.shape[1] or 2 * dy3.shape[2] < x3.shape[2]:
        dx3[...] = 0
    for a in range(x3.shape[0]):
        for oi in range(dy3.shape[1]):
            i0 = 2 * oi
            r0, r1, d0, d1 = x3[a, i0], x3[a, i0 + 1], dx3[a, i0], dx3[a, i0 + 1]
            for oj in range(dy3.shape[2]):
                j0 = 2 * oj
                v0, v1, v2, v3 = r0[j0], r0[j0 + 1], r1[j0], r1[j0 + 1]
                m = v0
                for v in (v1, v2, v3):
                    if v > m or v != v:
                        m = v
                g = dy3[a, oi, oj]
                # the first maximum in row-major window order, or the first NaN (np.argmax's choice)
                k0 = v0 == m or v0 != v0
                k1 = not k0 and (v1 == m or v1 != v1)
                k2 = not (k0 or k1) and (v2 == m or v2 != v2)
                k3 = not (k0 or k1 or k2)
                d0[j0] = g if k0 else 0
                d0[j0 + 1] = g if k1 else 0
                d1[j0] = g if k2 else 0
                d1[j0 + 1] = g if k3 else 0


def _is_2x2_inside(ctx: KernelCtx, x_shape: tuple[int, ...], y_shape: tuple[int, ...]) -> bool:
    (kh, kw), (sh, sw), (pt, _pb, pl, _pr) = ctx.attrs["ksize"], ctx.attrs["strides"], ctx.attrs["pads"]
    return ((kh, kw, sh, sw, pt, pl) == (2, 2, 2, 2, 0, 0) and 2 * y_shape[2] <= x_shape[2]
            and 2 * y_shape[3] <= x_shape[3])


def _pool_args(ctx: KernelCtx) -> tuple[int, ...]:
    (kh, kw), (sh, sw), (pt, _pb, pl, _pr) = ctx.attrs["ksize"], ctx.attrs["strides"], ctx.attrs["pads"]
    return kh, kw, sh, sw, pt, pl


def _planes(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[2], a.shape[3])


def _pool_factory(is_max: bool):
    def factory(ctx: KernelCtx) -> KernelFn:
        args = _pool_args(ctx)
        if is_max and _is_2x2_inside(ctx, ctx.in_descs[0].shape, ctx.out_descs[0].shape):
            def kernel(ins, outs):
                _max_pool_2x2(_planes(ins[0]), _planes(outs[0]))

            return fusable(kernel, lambda ins, outs: FusedCall(_max_pool_2x2, (_planes(ins[0]), _planes(outs[0]))))
        return lambda ins, outs: _pool(_planes(ins[0]), _planes(outs[0]), *args, is_max)

    return factory


def _pool_grad_factory(is_max: bool):
    def factory(ctx: KernelCtx) -> KernelFn:
        args = _pool_args(ctx)
        if is_max and _is_2x2_inside(ctx, ctx.in_descs[0].shape, ctx.in_descs[2].shape):
            def kernel(ins, outs):
                _max_pool_2x2_grad(_planes(ins[0]), _planes(ins[2]), _planes(outs[0]))

            return fusable(kernel, lambda ins, outs: FusedCall(_max_pool_2x2_grad, (_planes(ins[0]), _planes(ins[2]),
                                                                                     _planes(outs[0]))))
        return lambda ins, outs: _pool_grad(_planes(ins[0]), _planes(ins[2]), _planes(outs[0]), *args, is_max)

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
