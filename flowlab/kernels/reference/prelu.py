"""NumPy reference kernels of ops/prelu_ops.py (prelu, prelu_grad), as OneFlow's prelu_kernel.cpp: alpha
broadcast to x; alpha_diff the sum of the x <= 0 terms dy * x over the broadcast axes. ``alpha_index`` (each
element of one sample's x -> its alpha element) is shared with the other tiers."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def alpha_index(x_shape: tuple[int, ...], alpha_shape: tuple[int, ...]) -> np.ndarray:
    size = int(np.prod(alpha_shape))
    return np.ascontiguousarray(np.broadcast_to(np.arange(size).reshape(alpha_shape), x_shape[1:]).reshape(-1))


@register_kernel("prelu", "reference")
def _prelu(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        x, alpha = ins
        outs[0][...] = np.where(x > 0, x, x * alpha[None])

    return kernel


@register_kernel("prelu_grad", "reference")
def _prelu_grad(ctx: KernelCtx) -> KernelFn:
    x_shape, alpha_shape = ctx.in_descs[1].shape, ctx.in_descs[2].shape
    axes = (0, *[i + 1 for i, (a, d) in enumerate(zip(alpha_shape, x_shape[1:])) if a != d])

    def kernel(ins, outs):
        dy, x, alpha = ins
        outs[0][...] = np.where(x > 0, dy, dy * alpha[None])
        terms = np.where(x > 0, 0, dy * x)
        outs[1][...] = terms.sum(axis=axes, keepdims=True).reshape(alpha_shape)

    return kernel
