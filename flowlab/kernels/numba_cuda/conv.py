"""CUDA kernels: conv2d's data and filter gradients, max/avg pooling and their gradients (NCHW); conv2d itself is
an implicit GEMM (conv_gemm.py).

Direct kernels, one thread per element of the result: an input pixel sums the output pixels whose windows cover
it (data gradient, pooling gradients: gathers, so no atomics and the same sum order every run), a filter tap sums
over batch and output positions (filter gradient). Padding is never
materialized: a padding tap reads a zero, which still multiplies its weight (or dy), so a NaN or inf there gives
NaN as in the CPU's im2col kernels. Attributes are the ops' (strides, dilations, pads top/bottom/left/right,
groups; ksize for pools); output sizes come from the blob descs, as in the CPU kernels. Accumulators take the
output's dtype from a typed zero argument (float32 math for float32 blobs).
"""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, gt_or_nan, launch1


@cuda.jit(device=True)
def unravel4(i, shape):
    d3 = i % shape[3]
    i //= shape[3]
    d2 = i % shape[2]
    i //= shape[2]
    return i // shape[1], i % shape[1], d2, d3


@cuda.jit
def _conv2d_data_grad(dy, w, dx, sh, sw, dh, dw, pt, pl, groups, zero):
    cg, og = dx.shape[1] // groups, w.shape[0] // groups
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dx.size, step):
        b, c, ih, iw = unravel4(i, dx.shape)
        g, ci = c // cg, c % cg
        acc = zero
        for ki in range(w.shape[2]):
            th = ih + pt - ki * dh  # = oi * sh for the output row whose tap ki reads row ih
            if th >= 0 and th % sh == 0 and th // sh < dy.shape[2]:
                oi = th // sh
                for kj in range(w.shape[3]):
                    tw = iw + pl - kj * dw
                    if tw >= 0 and tw % sw == 0 and tw // sw < dy.shape[3]:
                        oj = tw // sw
                        for oc in range(g * og, (g + 1) * og):
                            acc += dy[b, oc, oi, oj] * w[oc, ci, ki, kj]
        dx[b, c, ih, iw] = acc


@cuda.jit
def _conv2d_filter_grad(dy, x, dw_, sh, sw, dh, dw, pt, pl, groups, zero):
    cg, og = x.shape[1] // groups, dw_.shape[0] // groups
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dw_.size, step):
        oc, ci, ki, kj = unravel4(i, dw_.shape)
        c = (oc // og) * cg + ci
        acc = zero
        for b in range(dy.shape[0]):
            for oi in range(dy.shape[2]):
                ih = oi * sh - pt + ki * dh
                for oj in range(dy.shape[3]):
                    iw = oj * sw - pl + kj * dw
                    v = x[b, c, ih, iw] if 0 <= ih < x.shape[2] and 0 <= iw < x.shape[3] else zero  # padding: zero
                    acc += dy[b, oc, oi, oj] * v
        dw_[oc, ci, ki, kj] = acc


def _conv_factory(kernel, result: int):
    """``result``: which array the threads cover (0: the output; conv grads: their output too)."""

    def factory(ctx: KernelCtx):
        (sh, sw), (dh, dw), (pt, _pb, pl, _pr) = ctx.attrs["strides"], ctx.attrs["dilations"], ctx.attrs["pads"]
        groups, threads = ctx.attrs["groups"], current_launch().threads
        zero = ctx.out_descs[0].dtype.np.type(0)

        def run(ins, outs, stream=0):
            launch1(kernel, outs[result].size, threads, stream, ins[0], ins[1], outs[result], sh, sw, dh, dw, pt, pl,
                    groups, zero)

        return run

    return factory


register_kernel("conv2d_data_grad", "numba", "gpu")(_conv_factory(_conv2d_data_grad, 0))
register_kernel("conv2d_filter_grad", "numba", "gpu")(_conv_factory(_conv2d_filter_grad, 0))


@cuda.jit(device=True)
def window_max_at(x, b, c, oi, oj, kh, kw, sh, sw, pt, pl):
    """(value, flat tap) of the first maximum of one pooling window over its taps inside x (a first NaN wins,
    as np.argmax); -inf at tap -1 when no tap is inside."""
    best, at = -np.inf, -1
    for ki in range(kh):
        ih = oi * sh - pt + ki
        if 0 <= ih < x.shape[2]:
            for kj in range(kw):
                iw = oj * sw - pl + kj
                if 0 <= iw < x.shape[3]:
                    v = x[b, c, ih, iw]
                    if at < 0 or gt_or_nan(v, best):
                        best, at = v, ki * kw + kj
    return best, at


@cuda.jit(device=True)
def window_count(oi, oj, kh, kw, sh, sw, pt, pl, h, w):
    """How many taps of a window are inside x (avg pooling divides by it, padding excluded)."""
    rows = min(oi * sh - pt + kh, h) - max(oi * sh - pt, 0)
    cols = min(oj * sw - pl + kw, w) - max(oj * sw - pl, 0)
    return max(rows, 0) * max(cols, 0)


@cuda.jit
def _pool(x, y, kh, kw, sh, sw, pt, pl, is_max, zero):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, y.size, step):
        b, c, oi, oj = unravel4(i, y.shape)
        if is_max:
            y[b, c, oi, oj] = window_max_at(x, b, c, oi, oj, kh, kw, sh, sw, pt, pl)[0]
        else:
            acc = zero
            for ki in range(kh):
                ih = oi * sh - pt + ki
                if 0 <= ih < x.shape[2]:
                    for kj in range(kw):
                        iw = oj * sw - pl + kj
                        if 0 <= iw < x.shape[3]:
                            acc += x[b, c, ih, iw]
            y[b, c, oi, oj] = acc / window_count(oi, oj, kh, kw, sh, sw, pt, pl, x.shape[2], x.shape[3])


@cuda.jit
def _pool_grad(x, dy, dx, kh, kw, sh, sw, pt, pl, is_max, zero):
    # one thread per dx pixel: the windows covering (ih, iw) have oi in [ceil((ih + pt - kh + 1) / sh), (ih + pt) / sh]
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dx.size, step):
        b, c, ih, iw = unravel4(i, dx.shape)
        acc = zero
        oi_lo = max(0, (ih + pt - kh + sh) // sh)
        oi_hi = min(dy.shape[2] - 1, (ih + pt) // sh)
        oj_lo = max(0, (iw + pl - kw + sw) // sw)
        oj_hi = min(dy.shape[3] - 1, (iw + pl) // sw)
        for oi in range(oi_lo, oi_hi + 1):
            for oj in range(oj_lo, oj_hi + 1):
                if is_max:
                    tap = window_max_at(x, b, c, oi, oj, kh, kw, sh, sw, pt, pl)[1]
                    if tap == (ih - (oi * sh - pt)) * kw + (iw - (oj * sw - pl)):
                        acc += dy[b, c, oi, oj]
                else:
                    acc += dy[b, c, oi, oj] / window_count(oi, oj, kh, kw, sh, sw, pt, pl, dx.shape[2], dx.shape[3])
        dx[b, c, ih, iw] = acc


def _pool_factory(is_max: bool, grad: bool):
    def factory(ctx: KernelCtx):
        (kh, kw), (sh, sw), (pt, _pb, pl, _pr) = ctx.attrs["ksize"], ctx.attrs["strides"], ctx.attrs["pads"]
        threads, zero = current_launch().threads, ctx.out_descs[0].dtype.np.type(0)

        def run(ins, outs, stream=0):
            if grad:  # ins: x, y, dy
                launch1(_pool_grad, outs[0].size, threads, stream, ins[0], ins[2], outs[0], kh, kw, sh, sw, pt, pl,
                        is_max, zero)
            else:
                launch1(_pool, outs[0].size, threads, stream, ins[0], outs[0], kh, kw, sh, sw, pt, pl, is_max, zero)

        return run

    return factory


register_kernel("max_pool2d", "numba", "gpu")(_pool_factory(True, False))
register_kernel("avg_pool2d", "numba", "gpu")(_pool_factory(False, False))
register_kernel("max_pool2d_grad", "numba", "gpu")(_pool_factory(True, True))
register_kernel("avg_pool2d_grad", "numba", "gpu")(_pool_factory(False, True))
