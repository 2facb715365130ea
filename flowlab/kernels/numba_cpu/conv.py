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

CHUNK_BYTES = 4 << 20  # the im2col buffer of one chunk; measured on LeNet conv shapes (see the module docstring)


@njit
def _range(off, stride, size, count):
    """The output positions o in [0, count) whose input o * stride + off lies in [0, size)."""
    lo = 0 if off >= 0 else (-off + stride - 1) // stride
    hi = (size - 1 - off) // stride + 1 if size - 1 - off >= 0 else 0
    return min(lo, count), max(min(hi, count), min(lo, count))


@njit
def _im2col(x, n0, nb, cols, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow):
    """cols[(c, ki, kj), (b, oi, oj)] = x[n0 + b, c, oi*sh + ki*dh - pt, oj*sw + kj*dw - pl], 0 outside x."""
    c_in, h, w = x.shape[1], x.shape[2], x.shape[3]
    p = oh * ow
    for c in range(c_in):
        for ki in range(kh):
            i_off = ki * dh - pt
            oi_lo, oi_hi = _range(i_off, sh, h, oh)
            for kj in range(kw):
                j_off = kj * dw - pl
                oj_lo, oj_hi = _range(j_off, sw, w, ow)
                row = cols[(c * kh + ki) * kw + kj]
                for b in range(nb):
                    plane = x[n0 + b, c]
                    base = b * p
                    row[base:base + oi_lo * ow] = 0
                    row[base + oi_hi * ow:base + p] = 0
                    for oi in range(oi_lo, oi_hi):
                        line = plane[oi * sh + i_off]
                        start = base + oi * ow
                        row[start:start + oj_lo] = 0
                        row[start + oj_hi:start + ow] = 0
                        for oj in range(oj_lo, oj_hi):
                            row[start + oj] = line[oj * sw + j_off]


@njit
def _col2im_add(cols, dx, n0, nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow):
    """The adjoint of _im2col: dx[n0 + b, c, i, j] += every cols entry _im2col took from there."""
    c_in, h, w = dx.shape[1], dx.shape[2], dx.shape[3]
    p = oh * ow
    for b in range(nb):
        for c in range(c_in):
            plane = dx[n0 + b, c]
            for ki in range(kh):
                i_off = ki * dh - pt
                oi_lo, oi_hi = _range(i_off, sh, h, oh)
                for kj in range(kw):
                    j_off = kj * dw - pl
                    oj_lo, oj_hi = _range(j_off, sw, w, ow)
                    row = cols[(c * kh + ki) * kw + kj]
                    for oi in range(oi_lo, oi_hi):
                        line = plane[oi * sh + i_off]
                        start = b * p + oi * ow
                        for oj in range(oj_lo, oj_hi):
                            line[oj * sw + j_off] += row[start + oj]


@njit
def _gather_chunk(a3, n0, nb, tmp):
    """tmp[o, (b, p)] = a3[n0 + b, o, p]: a chunk of (N, O, P) as one (O, nb*P) matrix."""
    p = a3.shape[2]
    for b in range(nb):
        for o in range(a3.shape[1]):
            tmp[o, b * p:(b + 1) * p] = a3[n0 + b, o]


@njit
def _conv_fwd(x, w2, out3, cols_buf, tmp_buf, chunk, groups, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow):
    n, o = x.shape[0], w2.shape[0]
    p, k = oh * ow, w2.shape[1] * groups
    og, kg = o // groups, k // groups
    for n0 in range(0, n, chunk):
        nb = min(chunk, n - n0)
        cols = cols_buf[:k * nb * p].reshape(k, nb * p)
        _im2col(x, n0, nb, cols, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow)
        if nb == 1:  # one sample: the GEMM writes the output plane stack directly
            for g in range(groups):
                np.dot(w2[g * og:(g + 1) * og], cols[g * kg:(g + 1) * kg], out3[n0, g * og:(g + 1) * og])
            continue
        tmp = tmp_buf[:o * nb * p].reshape(o, nb * p)
        for g in range(groups):
            np.dot(w2[g * og:(g + 1) * og], cols[g * kg:(g + 1) * kg], tmp[g * og:(g + 1) * og])
        for b in range(nb):
            for c in range(o):
                out3[n0 + b, c] = tmp[c, b * p:(b + 1) * p]


@njit
def _conv_data_grad(dy3, w2, dx, cols_buf, tmp_buf, chunk, groups, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow):
    n, o = dy3.shape[0], w2.shape[0]
    p, k = oh * ow, w2.shape[1] * groups
    og, kg = o // groups, k // groups
    dx[...] = 0
    for n0 in range(0, n, chunk):
        nb = min(chunk, n - n0)
        cols = cols_buf[:k * nb * p].reshape(k, nb * p)
        if nb == 1:
            for g in range(groups):
                np.dot(w2[g * og:(g + 1) * og].T, dy3[n0, g * og:(g + 1) * og], cols[g * kg:(g + 1) * kg])
        else:
            tmp = tmp_buf[:o * nb * p].reshape(o, nb * p)
            _gather_chunk(dy3, n0, nb, tmp)
            for g in range(groups):
                np.dot(w2[g * og:(g + 1) * og].T, tmp[g * og:(g + 1) * og], cols[g * kg:(g + 1) * kg])
        _col2im_add(cols, dx, n0, nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow)


@njit
def _conv_filter_grad(dy3, x, dw2, cols_buf, tmp_buf, part, chunk, groups, kh, kw, sh, sw, dh, dw, pt, pl, oh,
                      ow):
    n, o = dy3.shape[0], dw2.shape[0]
    p, k = oh * ow, dw2.shape[1] * groups
    og, kg = o // groups, k // groups
    dw2[...] = 0
    for n0 in range(0, n, chunk):
        nb = min(chunk, n - n0)
        cols = cols_buf[:k * nb * p].reshape(k, nb * p)
        _im2col(x, n0, nb, cols, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow)
        if nb == 1:
            tmp = dy3[n0]
        else:
            tmp = tmp_buf[:o * nb * p].reshape(o, nb * p)
            _gather_chunk(dy3, n0, nb, tmp)
        for g in range(groups):
            np.dot(tmp[g * og:(g + 1) * og], cols[g * kg:(g + 1) * kg].T, part)
            dw2[g * og:(g + 1) * og] += part


class _Geometry:
    """One conv task's window geometry and scratch buffers, made once when the runtime is built."""

    def __init__(self, ctx: KernelCtx, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                 out_hw: tuple[int, ...], dtype: np.dtype) -> None:
        n = x_shape[0]
        o, cg, kh, kw = w_shape
        self.groups = int(ctx.attrs["groups"])
        (sh, sw), (dh, dw), (pt, _pb, pl, _pr) = ctx.attrs["strides"], ctx.attrs["dilations"], ctx.attrs["pads"]
        oh, ow = out_hw
        self.args = (int(kh), int(kw), int(sh), int(sw), int(dh), int(dw), int(pt), int(pl), int(oh), int(ow))
        k, p = cg * self.groups * kh * kw, oh * ow
        per_sample = max(k * p * dtype.itemsize, 1)
        self.chunk = int(max(1, min(n, CHUNK_BYTES // per_sample)))
        self.cols = np.empty(max(k * p * self.chunk, 1), dtype)
        self.tmp = np.empty(max(o * p * self.chunk, 1) if self.chunk > 1 else 1, dtype)
        self.part = np.empty((o // self.groups, cg * kh * kw), dtype)


def _dtype(ctx: KernelCtx) -> np.dtype:
    return np.dtype(ctx.out_descs[0].dtype.np)


@register_kernel("conv2d", "numba")
def _conv(ctx: KernelCtx) -> KernelFn:
    g = _Geometry(ctx, ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.out_descs[0].shape[2:], _dtype(ctx))

    def kernel(ins, outs):
        x, w = ins
        out = outs[0]
        _conv_fwd(x, w.reshape(w.shape[0], -1), out.reshape(out.shape[0], out.shape[1], -1), g.cols, g.tmp,
                  g.chunk, g.groups, *g.args)

    return kernel


@register_kernel("conv2d_data_grad", "numba")
def _conv_data_grad_factory(ctx: KernelCtx) -> KernelFn:
    g = _Geometry(ctx, ctx.in_descs[2].shape, ctx.in_descs[1].shape, ctx.in_descs[0].shape[2:], _dtype(ctx))

    def kernel(ins, outs):
        dy, w = ins[0], ins[1]
        _conv_data_grad(dy.reshape(dy.shape[0], dy.shape[1], -1), w.reshape(w.shape[0], -1), outs[0], g.cols,
                        g.tmp, g.chunk, g.groups, *g.args)

    return kernel


@register_kernel("conv2d_filter_grad", "numba")
def _conv_filter_grad_factory(ctx: KernelCtx) -> KernelFn:
    g = _Geometry(ctx, ctx.in_descs[1].shape, ctx.in_descs[2].shape, ctx.in_descs[0].shape[2:], _dtype(ctx))

    def kernel(ins, outs):
        dy, x = ins[0], ins[1]
        dw = outs[0]
        _conv_filter_grad(dy.reshape(dy.shape[0], dy.shape[1], -1), x, dw.reshape(dw.shape[0], -1), g.cols,
                          g.tmp, g.part, g.chunk, g.groups, *g.args)

    return kernel
