"""Numba CPU kernels of ops/pool3d_ops.py (3-D pooling and its gradients); kernels/reference/pool3d.py says what
they compute. One loop nest per output cell over its window's cells inside the input."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _bounds(o, k, s, p, size):
    lo = o * s - p
    return max(lo, 0), min(lo + k, size)


@njit
def _pool(x, y, k, s, p, is_max, dx, dy, zero):
    """Forward (dx None-like: dx.size == 0) or gradient (dy given): one pass over the output cells."""
    n_, c_, d_, h_, w_ = x.shape
    for n in range(n_):
        for c in range(c_):
            for od in range(y.shape[2]):
                d0, d1 = _bounds(od, k[0], s[0], p[0], d_)
                for oh in range(y.shape[3]):
                    h0, h1 = _bounds(oh, k[1], s[1], p[2], h_)
                    for ow in range(y.shape[4]):
                        w0, w1 = _bounds(ow, k[2], s[2], p[4], w_)
                        m, md, mh, mw = x[n, c, d0, h0, w0], d0, h0, w0
                        acc = zero  # in the blob's dtype, as the reference sums
                        for i in range(d0, d1):
                            for j in range(h0, h1):
                                for q in range(w0, w1):
                                    v = x[n, c, i, j, q]
                                    acc += v
                                    if v > m or (v != v and m == m):  # the first maximum, or the first NaN
                                        m, md, mh, mw = v, i, j, q
                        cnt = (d1 - d0) * (h1 - h0) * (w1 - w0)
                        if dx.size == 0:
                            y[n, c, od, oh, ow] = m if is_max else acc / cnt
                        elif is_max:
                            dx[n, c, md, mh, mw] += dy[n, c, od, oh, ow]
                        else:
                            g = dy[n, c, od, oh, ow] / cnt
                            for i in range(d0, d1):
                                for j in range(h0, h1):
                                    for q in range(w0, w1):
                                        dx[n, c, i, j, q] += g


def _attrs(ctx: KernelCtx) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.array(ctx.attrs["ksize"], np.int64), np.array(ctx.attrs["strides"], np.int64),
            np.array(ctx.attrs["pads"], np.int64))


def _forward(is_max: bool):
    def factory(ctx: KernelCtx) -> KernelFn:
        k, s, p = _attrs(ctx)
        none = np.zeros((0, 0, 0, 0, 0), ctx.out_descs[0].dtype.np)
        zero = none.dtype.type(0)
        return lambda ins, outs: _pool(ins[0], outs[0], k, s, p, is_max, none, none, zero)

    return factory


def _backward(is_max: bool):
    def factory(ctx: KernelCtx) -> KernelFn:
        k, s, p = _attrs(ctx)
        zero = ctx.out_descs[0].dtype.np.type(0)

        def kernel(ins, outs):
            x, y, dy = ins
            outs[0][...] = 0
            _pool(x, y, k, s, p, is_max, outs[0], dy, zero)

        return kernel

    return factory


register_kernel("max_pool3d", "numba")(_forward(True))
register_kernel("avg_pool3d", "numba")(_forward(False))
register_kernel("max_pool3d_grad", "numba")(_backward(True))
register_kernel("avg_pool3d_grad", "numba")(_backward(False))
