"""Numba CPU kernels for conv2d and its data and filter gradients, each one Numba call over the whole batch.

Per sample: the input is copied into the interior of a zero-bordered plane stack (only when the conv pads), an
im2col of (C*kh*kw, OH*OW) is written by loops whose inner run is a contiguous copy of an output row at stride 1
(8-wide vector moves, runs.py), and one BLAS GEMM per group (blas.py: numpy's own OpenBLAS, on offsets into the flat
registers, no temporaries) writes the sample's output planes in place. The data gradient is the transposed GEMM into
a column buffer and a col2im that adds each output row's run back into the padded planes; the filter gradient is one
GEMM per sample and group that accumulates into dW (beta 1), not a product per sample added afterwards. A 1x1 conv
at stride 1 without padding multiplies the sample's planes directly (its im2col is the input itself).

The per-sample column buffer (627 KB at LeNet's conv2) stays near L2 and the GEMM writes NCHW output directly;
wider GEMMs over several samples measured no faster here once their copies are counted (75eefa0, ddffd7b; and
again with these kernels on h/conv: 1, 2, 4, 8, 16 samples side by side gave 1.00, 0.99-1.05, 1.00-1.04,
1.03-1.09, 1.12-1.26x the per-sample time for conv2's three kernels, thread CPU, interleaved, load 1). The
GEMM's layout does not matter at these shapes: conv2's filter gradient as NT (now), NN on a transposed im2col, TN,
or its transpose C^T = cols @ dy^T all ran within 5 % of each other and of the forward's NN (numpy's OpenBLAS).
benchmarks/lenet_vs_torch.py prints each kernel's time beside its GEMM time. Which kernel a conv gets (this im2col
one or Winograd's) is chosen in winograd_conv.py, where the three ops' factories are registered.
"""

from __future__ import annotations

import numpy as np

from ..registry import FusedCall, KernelCtx, KernelFn, Owned, fusable
from ._numba import njit
from .blas import blas_ready, gemm
from .runs import add_run, copy_run

# geometry vector layout (one int64 array, so a kernel's signature does not grow with every attribute)
N, C, H, W, OC, CG, KH, KW, OH, OW, SH, SW, DH, DW, PT, PL, GROUPS, HP, WP = range(19)


@njit
def _load_sample(x, x0, c, h, w, xp, hp, wp, pt, pl):
    """One sample's planes x[x0:] into the interior of xp, whose border stays zero."""
    for ci in range(c):
        for i in range(h):
            copy_run(xp, (ci * hp + i + pt) * wp + pl, x, x0 + (ci * h + i) * w, w)


@njit
def _im2col(src, s0, g, cols):
    """cols[(ci, ki, kj), (oi, oj)] = src[s0 + (ci, oi*sh + ki*dh, oj*sw + kj*dw)] over planes of (hp, wp)."""
    c, hp, wp, kh, kw, oh, ow = g[C], g[HP], g[WP], g[KH], g[KW], g[OH], g[OW]
    sh, sw, dh, dw = g[SH], g[SW], g[DH], g[DW]
    p = oh * ow
    r = 0
    for ci in range(c):
        for ki in range(kh):
            for kj in range(kw):
                base = s0 + ci * hp * wp + ki * dh * wp + kj * dw
                for oi in range(oh):
                    if sw == 1:  # 8-wide vector moves (runs.py): 3x the scalar copy a loop this short gets
                        copy_run(cols, r * p + oi * ow, src, base + oi * sh * wp, ow)
                    else:
                        # row views indexed from 0: Numba then proves the index non-negative and drops its
                        # wraparound test (4x faster measured)
                        sv, dv = src[base + oi * sh * wp:], cols[r * p + oi * ow:]
                        for oj in range(ow):
                            dv[oj] = sv[oj * sw]
                r += 1


@njit
def _col2im(cols, g, dst, d0):
    """The adjoint of _im2col: dst[d0 + (ci, oi*sh + ki*dh, oj*sw + kj*dw)] += cols[(ci, ki, kj), (oi, oj)]."""
    c, hp, wp, kh, kw, oh, ow = g[C], g[HP], g[WP], g[KH], g[KW], g[OH], g[OW]
    sh, sw, dh, dw = g[SH], g[SW], g[DH], g[DW]
    p = oh * ow
    r = 0
    for ci in range(c):
        for ki in range(kh):
            for kj in range(kw):
                base = d0 + ci * hp * wp + ki * dh * wp + kj * dw
                for oi in range(oh):
                    if sw == 1:
                        add_run(dst, base + oi * sh * wp, cols, r * p + oi * ow, ow)
                    else:
                        dv, sv = dst[base + oi * sh * wp:], cols[r * p + oi * ow:]  # row views: see _im2col
                        for oj in range(ow):
                            dv[oj * sw] += sv[oj]
                r += 1


@njit
def _columns(x, s, g, xp, cols):
    """(buffer, offset) of sample s's im2col: written into cols, or x itself for a 1x1 stride-1 unpadded conv."""
    c, h, w = g[C], g[H], g[W]
    x0 = s * c * h * w
    if g[KH] == 1 and g[KW] == 1 and g[SH] == 1 and g[SW] == 1 and g[HP] == h and g[WP] == w:
        return x, x0
    if xp.size:
        _load_sample(x, x0, c, h, w, xp, g[HP], g[WP], g[PT], g[PL])
        _im2col(xp, 0, g, cols)
    else:
        _im2col(x, x0, g, cols)
    return cols, 0


# The kernels are loops over the batch of one sample's work (the sample functions), so that chains.py can run a
# sample's conv with the ops after it (or its gradients with the ops before them) while its data is in cache.
@njit
def conv_sample(x, w, y, xp, cols, g, s):
    """Sample s's output planes y[s] = W (*) x[s]."""
    o, groups, p = g[OC], g[GROUPS], g[OH] * g[OW]
    og, kg = o // groups, g[CG] * g[KH] * g[KW]
    b, b0 = _columns(x, s, g, xp, cols)
    for gi in range(groups):
        gemm(False, False, og, p, kg, w, gi * og * kg, kg, b, b0 + gi * kg * p, p, 0.0, y, (s * o + gi * og) * p, p)


@njit
def _conv_fwd(x, w, y, xp, cols, g):
    for s in range(g[N]):
        conv_sample(x, w, y, xp, cols, g, s)


@njit
def filter_grad_sample(dy, x, dw, xp, cols, g, s):
    """dW_g += dy_g[s] @ cols_g[s]^T: sample s's share, accumulated by BLAS (beta 1) in sample order."""
    o, groups, p = g[OC], g[GROUPS], g[OH] * g[OW]
    og, kg = o // groups, g[CG] * g[KH] * g[KW]
    b, b0 = _columns(x, s, g, xp, cols)
    for gi in range(groups):
        gemm(False, True, og, kg, p, dy, (s * o + gi * og) * p, p, b, b0 + gi * kg * p, p, 1.0, dw, gi * og * kg, kg)


@njit
def _conv_filter_grad(dy, x, dw, xp, cols, g):
    for i in range(dw.size):
        dw[i] = 0.0
    for s in range(g[N]):
        filter_grad_sample(dy, x, dw, xp, cols, g, s)


@njit
def data_grad_sample(dy, w, dx, xp, cols, g, s):
    """Sample s's input gradient dx[s] = W^T dy[s], its columns added back into the planes (col2im)."""
    c, h, wd, o, groups, p = g[C], g[H], g[W], g[OC], g[GROUPS], g[OH] * g[OW]
    og, kg = o // groups, g[CG] * g[KH] * g[KW]
    hp, wp, pt, pl = g[HP], g[WP], g[PT], g[PL]
    x0 = s * c * h * wd
    if g[KH] == 1 and g[KW] == 1 and g[SH] == 1 and g[SW] == 1 and hp == h and wp == wd:
        for gi in range(groups):  # dx_g = W_g^T dy_g straight into the sample's planes
            gemm(True, False, kg, p, og, w, gi * og * kg, kg, dy, (s * o + gi * og) * p, p, 0.0, dx, x0 + gi * kg * p,
                 p)
        return
    for gi in range(groups):
        gemm(True, False, kg, p, og, w, gi * og * kg, kg, dy, (s * o + gi * og) * p, p, 0.0, cols, gi * kg * p, p)
    if xp.size:
        for i in range(xp.size):
            xp[i] = 0.0
        _col2im(cols, g, xp, 0)
        for ci in range(c):  # the interior back into dx
            for i in range(h):
                copy_run(dx, x0 + (ci * h + i) * wd, xp, (ci * hp + i + pt) * wp + pl, wd)
    else:
        for i in range(x0, x0 + c * h * wd):
            dx[i] = 0.0
        _col2im(cols, g, dx, x0)


@njit
def _conv_data_grad(dy, w, dx, xp, cols, g):
    for s in range(g[N]):
        data_grad_sample(dy, w, dx, xp, cols, g, s)


class _Conv:
    """Geometry and buffers of one conv task, made once when the runtime is built."""

    def __init__(self, ctx: KernelCtx, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                 out_hw: tuple[int, ...]) -> None:
        blas_ready()
        n, c, h, w = x_shape
        o, cg, kh, kw = w_shape
        (sh, sw), (dh, dw), (pt, pb, pl, pr) = ctx.attrs["strides"], ctx.attrs["dilations"], ctx.attrs["pads"]
        hp, wp = h + pt + pb, w + pl + pr
        self.geo = np.array([n, c, h, w, o, cg, kh, kw, out_hw[0], out_hw[1], sh, sw, dh, dw, pt, pl,
                             ctx.attrs["groups"], hp, wp], np.int64)
        dtype = ctx.in_descs[0].dtype.np
        self.xp = np.zeros(c * hp * wp if (hp, wp) != (h, w) else 0, dtype)
        self.cols = np.zeros(c * kh * kw * out_hw[0] * out_hw[1], dtype)

    def __repr__(self) -> str:
        return f"_Conv(geo={self.geo.tolist()}, padded={self.xp.size}, cols={self.cols.size})"


def _conv_kernel(fn: object, c: _Conv) -> KernelFn:
    """The kernel fn(in0, in1, out0, xp, cols, geo) on the flat registers, and its fused form (the conv's own
    buffers and geometry passed as Owned arrays)."""
    def args(ins, outs) -> tuple:
        return ins[0].reshape(-1), ins[1].reshape(-1), outs[0].reshape(-1)

    def kernel(ins, outs):
        fn(*args(ins, outs), c.xp, c.cols, c.geo)  # type: ignore[operator]

    return fusable(kernel, lambda ins, outs: FusedCall(fn, (*args(ins, outs), Owned(c.xp), Owned(c.cols),
                                                            Owned(c.geo))))
