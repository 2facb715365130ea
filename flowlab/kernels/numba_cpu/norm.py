"""Numba CPU kernels: batch normalization over an (outer, channels, inner) view, and its gradient."""

from __future__ import annotations

import math as _m

from ..reference.norm import as3
from ..registry import FusedCall, KernelCtx, KernelFn, fusable, register_kernel
from ._numba import njit


@njit
def _norm(x, y, mm, mv, gamma, beta, mean_out, inv_out, eps, momentum, training):
    outer, channels, inner = x.shape
    count = outer * inner
    for c in range(channels):
        if training:
            s = 0.0
            for a in range(outer):
                for i in range(inner):
                    s += x[a, c, i]
            mean = s / count
            sq = 0.0
            for a in range(outer):
                for i in range(inner):
                    d = x[a, c, i] - mean
                    sq += d * d
            var = sq / count
            mm[c] = momentum * mm[c] + (1 - momentum) * mean
            # the unbiased variance, as cuDNN's BatchNormalizationForwardTraining (OneFlow v0.3.4's kernel) keeps
            mv[c] = momentum * mv[c] + (1 - momentum) * (sq / max(count - 1, 1))
        else:
            mean, var = mm[c], mv[c]
        inv = 1.0 / _m.sqrt(var + eps)
        mean_out[c], inv_out[c] = mean, inv
        k = inv * gamma[c]
        for a in range(outer):
            for i in range(inner):
                y[a, c, i] = (x[a, c, i] - mean) * k + beta[c]


@njit
def _norm_grad(x, dy, mean, inv, gamma, dx, dgamma, dbeta):
    outer, channels, inner = x.shape
    count = outer * inner
    for c in range(channels):
        sb, sg = 0.0, 0.0
        for a in range(outer):
            for i in range(inner):
                sb += dy[a, c, i]
                sg += dy[a, c, i] * (x[a, c, i] - mean[c]) * inv[c]
        dbeta[c], dgamma[c] = sb, sg
        k = gamma[c] * inv[c] / count
        for a in range(outer):
            for i in range(inner):
                xhat = (x[a, c, i] - mean[c]) * inv[c]
                dx[a, c, i] = k * (count * dy[a, c, i] - sb - xhat * sg)


@register_kernel("normalization", "numba")
def _norm_f(ctx: KernelCtx) -> KernelFn:
    shape3 = as3(ctx.in_descs[0].shape, ctx.attrs["axis"])
    eps, momentum, training = ctx.attrs["epsilon"], ctx.attrs["momentum"], ctx.attrs["training"]

    def args(ins, outs):  # the moving mean and variance (ins[1], ins[2]) are updated in place when training
        x, mm, mv, gamma, beta = ins
        return (x.reshape(shape3), outs[0].reshape(shape3), mm, mv, gamma, beta, outs[1], outs[2], eps, momentum,
                training)

    def kernel(ins, outs):
        _norm(*args(ins, outs))

    # fusable: a ResNet's runs of fused kernels broke at every batch norm (docs/performance.md, "Compiling a big
    # Plan's segments")
    return fusable(kernel, lambda ins, outs: FusedCall(_norm, args(ins, outs)))


@register_kernel("normalization_grad", "numba")
def _norm_grad_f(ctx: KernelCtx) -> KernelFn:
    shape3 = as3(ctx.in_descs[0].shape, ctx.attrs["axis"])

    def args(ins, outs):
        x, dy, mean, inv, gamma = ins
        return x.reshape(shape3), dy.reshape(shape3), mean, inv, gamma, outs[0].reshape(shape3), outs[1], outs[2]

    def kernel(ins, outs):
        _norm_grad(*args(ins, outs))

    return fusable(kernel, lambda ins, outs: FusedCall(_norm_grad, args(ins, outs)))
