"""NumPy reference kernels: batch normalization and its gradient (statistics over every axis but ``axis``)."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def as3(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    axis %= len(shape)
    return int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:]))


@register_kernel("normalization", "reference")
def _norm(ctx: KernelCtx) -> KernelFn:
    shape3 = as3(ctx.in_descs[0].shape, ctx.attrs["axis"])
    eps, momentum, training = ctx.attrs["epsilon"], ctx.attrs["momentum"], ctx.attrs["training"]

    def kernel(ins, outs):
        x, moving_mean, moving_var, gamma, beta = ins
        x3 = x.reshape(shape3)
        if training:
            # float64 accumulation, as the Numba and CUDA kernels (a float32 mean over N*H*W runs loses digits)
            mean, var = x3.mean(axis=(0, 2), dtype=np.float64), x3.var(axis=(0, 2), dtype=np.float64)
            moving_mean[...] = momentum * moving_mean + (1 - momentum) * mean  # in place, like OneFlow's op
            # the unbiased variance, as cuDNN's BatchNormalizationForwardTraining (OneFlow v0.3.4's kernel) keeps
            count = x3.shape[0] * x3.shape[2]
            moving_var[...] = momentum * moving_var + (1 - momentum) * var * (count / max(count - 1, 1))
        else:
            mean, var = moving_mean, moving_var
        inv = 1.0 / np.sqrt(var + eps)
        y3 = (x3 - mean[None, :, None]) * (inv * gamma)[None, :, None] + beta[None, :, None]
        outs[0][...] = y3.reshape(outs[0].shape)
        outs[1][...] = mean
        outs[2][...] = inv

    return kernel


@register_kernel("normalization_grad", "reference")
def _norm_grad(ctx: KernelCtx) -> KernelFn:
    shape3 = as3(ctx.in_descs[0].shape, ctx.attrs["axis"])
    count = shape3[0] * shape3[2]

    def kernel(ins, outs):
        x, dy, mean, inv, gamma = ins
        x3, dy3 = x.reshape(shape3), dy.reshape(shape3)
        xhat = (x3 - mean[None, :, None]) * inv[None, :, None]
        dbeta = dy3.sum(axis=(0, 2), dtype=np.float64)  # float64 sums, as the Numba and CUDA kernels
        dgamma = (dy3 * xhat).sum(axis=(0, 2), dtype=np.float64)
        dx3 = (gamma * inv)[None, :, None] / count * (count * dy3 - dbeta[None, :, None]
                                                      - xhat * dgamma[None, :, None])
        outs[0][...] = dx3.reshape(outs[0].shape)
        outs[1][...] = dgamma
        outs[2][...] = dbeta

    return kernel
