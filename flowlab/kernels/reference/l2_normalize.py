"""NumPy reference kernels of ops/l2_normalize_ops.py (l2_normalize, l2_normalize_grad), as OneFlow's CPU kernel
computes them; epsilon is OneFlow's float attr, in the blob's dtype."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def epsilon_of(ctx: KernelCtx):
    return ctx.out_descs[0].dtype.np.type(np.float32(ctx.attrs["epsilon"]))


@register_kernel("l2_normalize", "reference")
def _l2(ctx: KernelCtx) -> KernelFn:
    axis, eps = ctx.attrs["axis"] % len(ctx.in_descs[0].shape), epsilon_of(ctx)

    def kernel(ins, outs):
        x = ins[0]
        s = np.sum(x * x, axis=axis, keepdims=True)
        outs[1][...] = s
        outs[0][...] = x / np.sqrt(np.maximum(s, eps))

    return kernel


@register_kernel("l2_normalize_grad", "reference")
def _l2_grad(ctx: KernelCtx) -> KernelFn:
    axis, eps = ctx.attrs["axis"] % len(ctx.in_descs[0].shape), epsilon_of(ctx)

    def kernel(ins, outs):
        dy, y, s = ins
        norm = np.sqrt(np.maximum(s, eps))
        inner = np.sum(dy * y, axis=axis, keepdims=True)
        outs[0][...] = np.where(s >= eps, (dy - inner * y) / norm, dy / norm)

    return kernel
