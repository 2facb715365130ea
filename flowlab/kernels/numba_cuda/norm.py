"""CUDA kernels: batch normalization and its gradient over an (outer, channels, inner) view. One block per channel
(block-stride past the grid): the channel's statistics are block reductions in float64 (a two-pass variance, as
the CPU kernels), then its threads write the channel's elements. Training updates the moving statistics in place,
as OneFlow's op does."""

from __future__ import annotations

import functools

import numba

from ..reference.norm import as3
from ..registry import KernelCtx, register_kernel
from ._cuda import block_sum, block_threads, blocks, cuda, current_launch, flat, sqrt


@functools.cache
def _kernels(threads: int):
    @cuda.jit
    def norm(x, mm, mv, gamma, beta, y, mean_out, inv_out, outer, channels, inner, eps, momentum, training):
        shared = cuda.shared.array(threads, numba.float64)
        tid = cuda.threadIdx.x
        count = outer * inner
        for c in range(cuda.blockIdx.x, channels, cuda.gridDim.x):
            if training:
                s = 0.0
                for e in range(tid, count, threads):
                    s += x[((e // inner) * channels + c) * inner + e % inner]
                mean = block_sum(shared, tid, s) / count
                sq = 0.0
                for e in range(tid, count, threads):
                    d = x[((e // inner) * channels + c) * inner + e % inner] - mean
                    sq += d * d
                var = block_sum(shared, tid, sq) / count
            else:
                mean, var = numba.float64(mm[c]), numba.float64(mv[c])
            inv = numba.float64(1.0) / sqrt(var + eps)  # NaN or inf as on the GPU, also in the simulator
            k = inv * gamma[c]
            for e in range(tid, count, threads):
                at = ((e // inner) * channels + c) * inner + e % inner
                y[at] = (x[at] - mean) * k + beta[c]
            cuda.syncthreads()  # every thread has read mm/mv before thread 0 updates them
            if tid == 0:
                if training:
                    mm[c] = momentum * mm[c] + (1 - momentum) * mean
                    # the unbiased variance, as cuDNN's BatchNormalizationForwardTraining keeps
                    mv[c] = momentum * mv[c] + (1 - momentum) * var * count / max(count - 1, 1)
                mean_out[c], inv_out[c] = mean, inv

    @cuda.jit
    def norm_grad(x, dy, mean, inv, gamma, dx, dgamma, dbeta, outer, channels, inner):
        shared = cuda.shared.array(threads, numba.float64)
        tid = cuda.threadIdx.x
        count = outer * inner
        for c in range(cuda.blockIdx.x, channels, cuda.gridDim.x):
            pb, pg = 0.0, 0.0
            for e in range(tid, count, threads):
                at = ((e // inner) * channels + c) * inner + e % inner
                pb += dy[at]
                pg += dy[at] * (x[at] - mean[c]) * inv[c]
            sb = block_sum(shared, tid, pb)
            sg = block_sum(shared, tid, pg)
            k = gamma[c] * inv[c] / count
            for e in range(tid, count, threads):
                at = ((e // inner) * channels + c) * inner + e % inner
                xhat = (x[at] - mean[c]) * inv[c]
                dx[at] = k * (count * dy[at] - sb - xhat * sg)
            if tid == 0:
                dbeta[c], dgamma[c] = sb, sg

    return norm, norm_grad


@register_kernel("normalization", "numba", "gpu")
def _norm(ctx: KernelCtx):
    launch = current_launch()
    outer, channels, inner = as3(ctx.in_descs[0].shape, ctx.attrs["axis"])
    threads = block_threads(outer * inner, launch.threads)
    kernel = _kernels(threads)[0]
    consts = (outer, channels, inner, float(ctx.attrs["epsilon"]), float(ctx.attrs["momentum"]),
              bool(ctx.attrs["training"]))
    grid = blocks(channels, 1, launch.max_blocks)

    def run(ins, outs, stream=0):
        x, mm, mv, gamma, beta = ins
        kernel[grid, threads, stream](flat(x), mm, mv, gamma, beta, flat(outs[0]), outs[1], outs[2], *consts)

    return run


@register_kernel("normalization_grad", "numba", "gpu")
def _norm_grad(ctx: KernelCtx):
    launch = current_launch()
    shape3 = as3(ctx.in_descs[0].shape, ctx.attrs["axis"])
    threads = block_threads(shape3[0] * shape3[2], launch.threads)
    kernel = _kernels(threads)[1]
    grid = blocks(shape3[1], 1, launch.max_blocks)

    def run(ins, outs, stream=0):
        x, dy, mean, inv, gamma = ins
        kernel[grid, threads, stream](flat(x), flat(dy), mean, inv, gamma, flat(outs[0]), outs[1], outs[2], *shape3)

    return run
