"""CUDA conv2d forward as an implicit GEMM (NCHW): gemm.py's shared-memory tiles and register blocking, with the
im2col matrix gathered from the input while a tile is loaded instead of materialized.

Per image ``b`` and group ``g`` (grid z) the output ``y[b, g*og:(g+1)*og]`` viewed as (og, P) (P = OH * OW output
pixels) is ``W_g @ col``: ``W_g`` the group's filters as (og, K) (K = C/groups * KH * KW, contiguous in w), and
``col[k, p]`` the input tap ``x[b, g*cg + ci, oi*sh - pt + ki*dh, oj*sw - pl + kj*dw]`` for k = (ci, ki, kj) and
p = (oi, oj), zero outside the input. A block computes ``tile`` channels x ``tile`` pixels; per step along K it
stages ``tile_k`` filter taps of its channels and the matching ``tile_k`` rows of ``col`` for its pixels in shared
memory (consecutive threads gather consecutive output pixels: consecutive input columns at stride 1). Each thread
owns ``micro`` x ``micro`` outputs in registers. The sum runs over k in the order the direct kernel's
(ci, ki, kj) loops did, and a padding tap is a zero that still multiplies its weight (a NaN weight there gives NaN,
as the CPU's im2col). Launch configuration: the GEMM's ``tile``, ``tile_k``, ``micro`` (``launch_config``).
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, flat


@functools.cache
def conv_gemm_kernel(tile: int, tile_k: int, micro: int, dtype: np.dtype):
    if tile % micro:
        raise ValueError(f"the conv GEMM tile ({tile}) must be a multiple of micro ({micro})")
    acc_t = numba.from_dtype(dtype)  # float32 blobs accumulate in float32, as the direct kernel did
    side = tile // micro
    threads = side * side

    @cuda.jit
    def kernel(w, x, y, og, kdim, p, ow, kw, taps, groups, sh, sw, dh, dw, pt, pl):
        sa = cuda.shared.array((tile_k, tile), acc_t)  # filter taps, k-major
        sb = cuda.shared.array((tile_k, tile), acc_t)  # gathered input taps (col's rows)
        acc = cuda.local.array((micro, micro), acc_t)
        ra = cuda.local.array(micro, acc_t)
        rb = cuda.local.array(micro, acc_t)
        tid = cuda.threadIdx.x
        ty, tx = tid // side, tid % side
        row0, col0 = cuda.blockIdx.y * tile, cuda.blockIdx.x * tile  # channel in the group, output pixel
        b, g = cuda.blockIdx.z // groups, cuda.blockIdx.z % groups
        cg = x.shape[1] // groups
        a0, c0 = g * og * kdim, cuda.blockIdx.z * og * p  # y's channel block of (b, g) starts at (b*groups + g)*og
        for i in range(micro):
            for j in range(micro):
                acc[i, j] = 0
        for k0 in range(0, kdim, tile_k):
            for e in range(tid, tile * tile_k, threads):
                r, kk = e // tile_k, e % tile_k
                sa[kk, r] = w[a0 + (row0 + r) * kdim + k0 + kk] if row0 + r < og and k0 + kk < kdim else 0
            for e in range(tid, tile * tile_k, threads):
                kk, col = e // tile, e % tile
                k, pix = k0 + kk, col0 + col
                sb[kk, col] = 0
                if k < kdim and pix < p:
                    ci, t = k // taps, k % taps
                    ih = (pix // ow) * sh - pt + (t // kw) * dh
                    iw = (pix % ow) * sw - pl + (t % kw) * dw
                    if 0 <= ih < x.shape[2] and 0 <= iw < x.shape[3]:
                        sb[kk, col] = x[b, g * cg + ci, ih, iw]
            cuda.syncthreads()
            for kk in range(tile_k):
                for i in range(micro):
                    ra[i] = sa[kk, ty * micro + i]
                for j in range(micro):
                    rb[j] = sb[kk, tx * micro + j]
                for i in range(micro):
                    for j in range(micro):
                        acc[i, j] += ra[i] * rb[j]
            cuda.syncthreads()
        for i in range(micro):
            row = row0 + ty * micro + i
            for j in range(micro):
                col = col0 + tx * micro + j
                if row < og and col < p:
                    y[c0 + row * p + col] = acc[i, j]

    return kernel, threads


def conv2d_gemm(w_shape: tuple[int, ...], y_shape: tuple[int, ...], attrs: dict, dtype: np.dtype,
                tile: int | None = None, tile_k: int | None = None, micro: int | None = None):
    """run(x, w, y, stream) for device arrays of these shapes and the op's attributes (strides, dilations, pads,
    groups); tile sizes default to the launch configuration's."""
    (sh, sw), (dh, dw), (pt, _pb, pl, _pr) = attrs["strides"], attrs["dilations"], attrs["pads"]
    groups = attrs["groups"]
    launch = current_launch()
    tile, tile_k, micro = tile or launch.tile, tile_k or launch.tile_k, micro or launch.micro
    kernel, threads = conv_gemm_kernel(tile, tile_k, micro, np.dtype(dtype))
    og, kh, kw = w_shape[0] // groups, w_shape[2], w_shape[3]
    kdim, p = w_shape[1] * kh * kw, y_shape[2] * y_shape[3]
    grid = ((p + tile - 1) // tile, (og + tile - 1) // tile, y_shape[0] * groups)

    def run(x, w, y, stream=0):
        if y.size:
            kernel[grid, threads, stream](flat(w), x, flat(y), og, kdim, p, y_shape[3], kw, kh * kw, groups,
                                          sh, sw, dh, dw, pt, pl)

    return run


@register_kernel("conv2d", "numba", "gpu")
def _conv2d(ctx: KernelCtx):
    run = conv2d_gemm(ctx.in_descs[1].shape, ctx.out_descs[0].shape, ctx.attrs, ctx.out_descs[0].dtype.np)
    return lambda ins, outs, stream=0: run(ins[0], ins[1], outs[0], stream)
