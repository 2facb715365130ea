"""Numba CPU kernels for conv2d and its data and filter gradients: im2col over a chunk of the batch into one
buffer, then one BLAS GEMM per group and chunk (np.dot, scipy's OpenBLAS).

Why chunks and not the whole batch: the im2col matrix of LeNet's second convolution is 800 x 196 floats per
sample (627 KB), 63 MB for a batch of 100; a chunk of a few MB keeps it in the last-level cache between writing
it and the GEMM reading it, while each GEMM is still wide (thousands of columns), and the filter gradient still
accumulates a whole chunk in one GEMM. The im2col and col2im loops walk the window geometry directly (valid
output-column ranges computed per kernel offset), so padding costs no bounds test in the inner loop and no
padded copy of the input. Padded positions are zeros in the im2col matrix, as in the reference kernels, so a
NaN or Inf filter value reaches every output that the reference's products reach.

All buffers are made once, when the runtime builds the task's kernel (the factory), never per act.
"""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit

CHUNK_BYTES = 4 << 20  # the im2col buffer of one chunk of the batch


@njit
def _to_padded_nhwc(x, n0, nb, xp, pt, pl):
    """xp[b, pt + i, pl + j, c] = x[n0 + b, c, i, j]; the borders of xp are never written (zeros)."""
    c_in, h, w = x.shape[1], x.shape[2], x.shape[3]
    for b in range(nb):
        for c in range(c_in):
            for i in range(h):
                for j in range(w):
                    xp[b, i + pt, j + pl, c] = x[n0 + b, c, i, j]


@njit
def _from_padded_nhwc(xp, dx, n0, nb, pt, pl):
    c_in, h, w = dx.shape[1], dx.shape[2], dx.shape[3]
    for b in range(nb):
        for c in range(c_in):
            for i in range(h):
                for j in range(w):
                    dx[n0 + b, c, i, j] = xp[b, i + pt, j + pl, c]


@njit
def _im2row(xp, nb, rows, kh, kw, sh, sw, dh, dw, oh, ow, adjoint):
    """rows[g, (b, oi, oj), (ki, kj, c)] = xp[b, oi*sh + ki*dh, oj*sw + kj*dw, g*cg + c] (adjoint: xp += rows).

    The channels are innermost on both sides, so each copy is a run of cg contiguous values (kw*cg when the
    window's columns are adjacent): LeNet's 14- and 28-wide image rows made NCHW im2col runs too short."""
    groups, hp, wp, c_in = rows.shape[0], xp.shape[1], xp.shape[2], xp.shape[3]
    cg, kg, n_rows = c_in // groups, rows.shape[2], rows.shape[1]
    xf, rf = xp.reshape(-1), rows.reshape(-1)
    run = kw * cg if dw == 1 and groups == 1 else cg
    pieces = kw if run == cg else 1
    for g in range(groups):
        for b in range(nb):
            for oi in range(oh):
                for oj in range(ow):
                    dst = (g * n_rows + (b * oh + oi) * ow + oj) * kg
                    for ki in range(kh):
                        for piece in range(pieces):
                            src = ((b * hp + oi * sh + ki * dh) * wp + oj * sw + piece * dw) * c_in + g * cg
                            if adjoint:
                                for q in range(run):
                                    xf[src + q] += rf[dst + q]
                            else:
                                for q in range(run):
                                    rf[dst + q] = xf[src + q]
                            dst += run


@njit
def _weights_to_rows(w, wt):
    """wt[g, o, (ki, kj, c)] = w[g*og + o, c, ki, kj]."""
    og, kh, kw, cg = wt.shape[1], w.shape[2], w.shape[3], w.shape[1]
    for g in range(wt.shape[0]):
        for o in range(og):
            for ki in range(kh):
                for kj in range(kw):
                    for c in range(cg):
                        wt[g, o, (ki * kw + kj) * cg + c] = w[g * og + o, c, ki, kj]


@njit
def _gather_chunk(a3, n0, nb, tmp):
    """tmp[g, o, (b, p)] = a3[n0 + b, g*og + o, p]: a chunk of (N, O, P) as one (O, nb*P) matrix per group."""
    og, p = tmp.shape[1], a3.shape[2]
    for b in range(nb):
        for g in range(tmp.shape[0]):
            for o in range(og):
                tmp[g, o, b * p:(b + 1) * p] = a3[n0 + b, g * og + o]


@njit
def _conv_fwd(x, w, out3, xp_buf, rows_buf, tmp_buf, wt, chunk, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow):
    n, groups, og, kg = x.shape[0], wt.shape[0], wt.shape[1], wt.shape[2]
    p = oh * ow
    _weights_to_rows(w, wt)
    for n0 in range(0, n, chunk):
        nb = min(chunk, n - n0)
        _to_padded_nhwc(x, n0, nb, xp_buf, pt, pl)
        rows = rows_buf[:groups * nb * p * kg].reshape(groups, nb * p, kg)
        _im2row(xp_buf, nb, rows, kh, kw, sh, sw, dh, dw, oh, ow, False)
        tmp = tmp_buf[:groups * og * nb * p].reshape(groups, og, nb * p)
        for g in range(groups):  # (og, nb*P): each output plane is then one contiguous copy
            np.dot(wt[g], rows[g].T, tmp[g])
        for b in range(nb):
            for g in range(groups):
                for o in range(og):
                    out3[n0 + b, g * og + o] = tmp[g, o, b * p:(b + 1) * p]


@njit
def _conv_data_grad(dy3, w, dx, xp_buf, rows_buf, tmp_buf, wt, chunk, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow):
    n, groups, og, kg = dy3.shape[0], wt.shape[0], wt.shape[1], wt.shape[2]
    p = oh * ow
    _weights_to_rows(w, wt)
    for n0 in range(0, n, chunk):
        nb = min(chunk, n - n0)
        dyt = tmp_buf[:groups * og * nb * p].reshape(groups, og, nb * p)
        _gather_chunk(dy3, n0, nb, dyt)
        rows = rows_buf[:groups * nb * p * kg].reshape(groups, nb * p, kg)
        for g in range(groups):
            np.dot(dyt[g].T, wt[g], rows[g])
        xp_buf[...] = 0
        _im2row(xp_buf, nb, rows, kh, kw, sh, sw, dh, dw, oh, ow, True)
        _from_padded_nhwc(xp_buf, dx, n0, nb, pt, pl)


@njit
def _conv_filter_grad(dy3, x, dw4, xp_buf, rows_buf, tmp_buf, wt, part, chunk, kh, kw, sh, sw, dh, dw, pt, pl,
                      oh, ow):
    n, groups, og, kg = dy3.shape[0], wt.shape[0], wt.shape[1], wt.shape[2]
    p = oh * ow
    wt[...] = 0
    for n0 in range(0, n, chunk):
        nb = min(chunk, n - n0)
        _to_padded_nhwc(x, n0, nb, xp_buf, pt, pl)
        rows = rows_buf[:groups * nb * p * kg].reshape(groups, nb * p, kg)
        _im2row(xp_buf, nb, rows, kh, kw, sh, sw, dh, dw, oh, ow, False)
        dyt = tmp_buf[:groups * og * nb * p].reshape(groups, og, nb * p)
        _gather_chunk(dy3, n0, nb, dyt)
        for g in range(groups):
            np.dot(dyt[g], rows[g], part)
            wt[g] += part
    cg = dw4.shape[1]
    for g in range(groups):
        for o in range(og):
            for ki in range(kh):
                for kj in range(kw):
                    for c in range(cg):
                        dw4[g * og + o, c, ki, kj] = wt[g, o, (ki * kw + kj) * cg + c]


class _Geometry:
    """One conv task's window geometry and scratch buffers, made once when the runtime is built."""

    def __init__(self, ctx: KernelCtx, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                 out_hw: tuple[int, ...], dtype: np.dtype) -> None:
        n, c_in, h, w = x_shape
        o, cg, kh, kw = w_shape
        groups = int(ctx.attrs["groups"])
        (sh, sw), (dh, dw), (pt, pb, pl, pr) = ctx.attrs["strides"], ctx.attrs["dilations"], ctx.attrs["pads"]
        oh, ow = out_hw
        self.args = (int(kh), int(kw), int(sh), int(sw), int(dh), int(dw), int(pt), int(pl), int(oh), int(ow))
        kg, p = cg * kh * kw, oh * ow
        per_sample = max(groups * kg * p * dtype.itemsize, 1)
        self.chunk = int(max(1, min(n, CHUNK_BYTES // per_sample)))
        # the padded input of a chunk, channels last; its borders stay zero (only the interior is written)
        self.xp = np.zeros((self.chunk, h + pt + pb, w + pl + pr, c_in), dtype)
        self.rows = np.empty(max(groups * kg * p * self.chunk, 1), dtype)
        self.tmp = np.empty(max(o * p * self.chunk, 1), dtype)
        self.wt = np.empty((groups, o // groups, kg), dtype)
        self.part = np.empty((o // groups, kg), dtype)


def _dtype(ctx: KernelCtx) -> np.dtype:
    return np.dtype(ctx.out_descs[0].dtype.np)


@register_kernel("conv2d", "numba")
def _conv(ctx: KernelCtx) -> KernelFn:
    g = _Geometry(ctx, ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.out_descs[0].shape[2:], _dtype(ctx))

    def kernel(ins, outs):
        out = outs[0]
        _conv_fwd(ins[0], ins[1], out.reshape(out.shape[0], out.shape[1], -1), g.xp, g.rows, g.tmp, g.wt, g.chunk,
                  *g.args)

    return kernel


@register_kernel("conv2d_data_grad", "numba")
def _conv_data_grad_factory(ctx: KernelCtx) -> KernelFn:
    g = _Geometry(ctx, ctx.in_descs[2].shape, ctx.in_descs[1].shape, ctx.in_descs[0].shape[2:], _dtype(ctx))

    def kernel(ins, outs):
        dy = ins[0]
        _conv_data_grad(dy.reshape(dy.shape[0], dy.shape[1], -1), ins[1], outs[0], g.xp, g.rows, g.tmp, g.wt,
                        g.chunk, *g.args)

    return kernel


@register_kernel("conv2d_filter_grad", "numba")
def _conv_filter_grad_factory(ctx: KernelCtx) -> KernelFn:
    g = _Geometry(ctx, ctx.in_descs[1].shape, ctx.in_descs[2].shape, ctx.in_descs[0].shape[2:], _dtype(ctx))

    def kernel(ins, outs):
        dy = ins[0]
        _conv_filter_grad(dy.reshape(dy.shape[0], dy.shape[1], -1), ins[1], outs[0], g.xp, g.rows, g.tmp, g.wt,
                          g.part, g.chunk, *g.args)

    return kernel
