"""CUDA kernels of ops/pool3d_ops.py (3-D pooling and its gradients), one thread per output cell; the gradients
add into dx atomically (zeroed first). kernels/reference/pool3d.py says what they compute."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, register_kernel
from ._cuda import const, cuda, current_launch, launch1
from .elementwise import filler


@cuda.jit(device=True)
def _lo(o, k, s, p):
    return max(o * s - p, 0)


@cuda.jit(device=True)
def _hi(o, k, s, p, size):
    return min(o * s - p + k, size)


@cuda.jit
def _pool(x, y, k, s, p, is_max, backward, dx, dy, zero):
    start, step = cuda.grid(1), cuda.gridsize(1)
    _n, c_, od_, oh_, ow_ = y.shape
    for t in range(start, y.size, step):
        ow = t % ow_
        oh = (t // ow_) % oh_
        od = (t // (ow_ * oh_)) % od_
        c = (t // (ow_ * oh_ * od_)) % c_
        n = t // (ow_ * oh_ * od_ * c_)
        d0, d1 = _lo(od, k[0], s[0], p[0]), _hi(od, k[0], s[0], p[0], x.shape[2])
        h0, h1 = _lo(oh, k[1], s[1], p[2]), _hi(oh, k[1], s[1], p[2], x.shape[3])
        w0, w1 = _lo(ow, k[2], s[2], p[4]), _hi(ow, k[2], s[2], p[4], x.shape[4])
        m = x[n, c, d0, h0, w0]
        md, mh, mw = d0, h0, w0
        acc = zero  # not m * 0: inf * 0 is NaN
        for i in range(d0, d1):
            for j in range(h0, h1):
                for q in range(w0, w1):
                    v = x[n, c, i, j, q]
                    acc += v
                    if v > m or (v != v and m == m):  # the first maximum, or the first NaN
                        m, md, mh, mw = v, i, j, q
        cnt = (d1 - d0) * (h1 - h0) * (w1 - w0)
        if not backward:
            y[n, c, od, oh, ow] = m if is_max else acc / cnt
        elif is_max:
            cuda.atomic.add(dx, (n, c, md, mh, mw), dy[n, c, od, oh, ow])
        else:
            g = dy[n, c, od, oh, ow] / cnt
            for i in range(d0, d1):
                for j in range(h0, h1):
                    for q in range(w0, w1):
                        cuda.atomic.add(dx, (n, c, i, j, q), g)


def _attrs(ctx: KernelCtx) -> tuple:
    return tuple(const(np.array(ctx.attrs[a], np.int64)) for a in ("ksize", "strides", "pads"))


def _forward(is_max: bool):
    def factory(ctx: KernelCtx):
        k, s, p = _attrs(ctx)
        threads = current_launch().threads
        none = const(np.zeros((1, 1, 1, 1, 1), ctx.out_descs[0].dtype.np))
        zero = ctx.out_descs[0].dtype.np.type(0)

        def run(ins, outs, stream=0):
            launch1(_pool, outs[0].size, threads, stream, ins[0], outs[0], k, s, p, is_max, False, none, none,
                    zero)

        return run

    return factory


def _backward(is_max: bool):
    def factory(ctx: KernelCtx):
        k, s, p = _attrs(ctx)
        threads, zero = current_launch().threads, filler(ctx.out_descs[0].dtype.np, 0)
        zero_value = ctx.out_descs[0].dtype.np.type(0)

        def run(ins, outs, stream=0):
            zero(outs[0].reshape(-1), stream)
            launch1(_pool, ins[2].size, threads, stream, ins[0], ins[1], k, s, p, is_max, True, outs[0], ins[2],
                    zero_value)

        return run

    return factory


register_kernel("max_pool3d", "numba", "gpu")(_forward(True))
register_kernel("avg_pool3d", "numba", "gpu")(_forward(False))
register_kernel("max_pool3d_grad", "numba", "gpu")(_backward(True))
register_kernel("avg_pool3d_grad", "numba", "gpu")(_backward(False))
