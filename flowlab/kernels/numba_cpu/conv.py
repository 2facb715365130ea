"""Numba CPU kernels for conv2d and its data and filter gradients: per sample, an im2col gather over indices
precomputed once (reference/cnn.py's conv_geometry; int32 where they fit) into one buffer, then one BLAS GEMM
per group (np.dot, scipy's OpenBLAS) writing the sample's output planes directly.

Measured against the alternatives on LeNet's conv2 forward (batch 100, 32 -> 64 channels, 5x5, 14x14), 1 thread,
in one process on this shared 2-core VM (load 3-5): the GEMMs alone take 53-62 ms of this kernel's 81-89 ms;
im2col over chunks of the batch (one wide GEMM per chunk, channels-last rows of kw*C contiguous values: commit
75eefa0 on h/conv) took 87-98 ms at 6 samples a chunk and 109-120 ms at 26, and NCHW im2col loops without an
index array (ddffd7b) 90-101 ms at one sample. The per-sample buffer (627 KB) stays near L2 and the output needs
no transpose, which outweighs a wider GEMM here. benchmarks/lenet_vs_torch.py prints the per-kernel times.
"""

from __future__ import annotations

import numpy as np

from ..reference.cnn import conv_geometry
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
        if self.idx.size and self.idx.max() < 2**31:  # half the index bytes each gather reads (1.25 MB at LeNet)
            self.idx = self.idx.astype(np.int32)
        self.xp = np.zeros(geo["padded"], dtype)
        self.cols = np.zeros(geo["idx"].shape, dtype)
        self.og = w_shape[0] // self.groups
        self.kg = self.cols.shape[0] // self.groups
        self.part = np.empty((self.og, self.kg), dtype)  # a sample's filter gradient, added into dw


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
        part = c.part
        _pad_into(x, c.xp, c.pt, c.pl)
        for n in range(x.shape[0]):
            _gather(c.xp[n].reshape(-1), c.idx, c.cols)
            for g in range(c.groups):
                _dot(dy3[n, g * c.og:(g + 1) * c.og], c.cols[g * c.kg:(g + 1) * c.kg].T, part)
                dw[g * c.og:(g + 1) * c.og] += part

    return kernel


