"""Numba CPU kernels of ops/prelu_ops.py (prelu, prelu_grad); kernels/reference/prelu.py says what they
compute. x is viewed as (N, M), alpha through ``alpha_index`` (M -> alpha's flat index)."""

from __future__ import annotations

from ..reference.prelu import alpha_index
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _prelu(x, alpha, aidx, y):
    for n in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[n, j]
            y[n, j] = v if v > 0 else v * alpha[aidx[j]]


@njit
def _prelu_grad(dy, x, alpha, aidx, dx, da):
    da[:] = 0
    for n in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[n, j]
            if v > 0:
                dx[n, j] = dy[n, j]
            else:
                dx[n, j] = dy[n, j] * alpha[aidx[j]]
                da[aidx[j]] += dy[n, j] * v


@register_kernel("prelu", "numba")
def _prelu_f(ctx: KernelCtx) -> KernelFn:
    x_shape = ctx.in_descs[0].shape
    aidx, m = alpha_index(x_shape, ctx.in_descs[1].shape), int(ctx.in_descs[0].elem_cnt // x_shape[0])

    def kernel(ins, outs):
        _prelu(ins[0].reshape(-1, m), ins[1].reshape(-1), aidx, outs[0].reshape(-1, m))

    return kernel


@register_kernel("prelu_grad", "numba")
def _prelu_grad_f(ctx: KernelCtx) -> KernelFn:
    x_shape = ctx.in_descs[1].shape
    aidx, m = alpha_index(x_shape, ctx.in_descs[2].shape), int(ctx.in_descs[1].elem_cnt // x_shape[0])

    def kernel(ins, outs):
        dy, x, alpha = ins
        _prelu_grad(dy.reshape(-1, m), x.reshape(-1, m), alpha.reshape(-1), aidx, outs[0].reshape(-1, m),
                    outs[1].reshape(-1))

    return kernel
