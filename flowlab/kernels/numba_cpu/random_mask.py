"""Numba CPU kernel of ops/random_mask_ops.py (random_mask_like): the same host-stream draws as the reference, the
comparison in Numba (as the CPU dropout kernel)."""

from __future__ import annotations

import numpy as np

from ..reference.cnn import dropout_stream
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _mask(r, rate, out):
    r, out = r.ravel(), out.ravel()
    for i in range(out.size):
        out[i] = 1 if r[i] >= rate else 0


@register_kernel("random_mask_like", "numba")
def _random_mask_like(ctx: KernelCtx) -> KernelFn:
    rate, rng = ctx.attrs["rate"], dropout_stream(ctx)
    draws = np.empty(ctx.out_descs[0].shape)

    def kernel(ins, outs):
        rng.random(out=draws)
        _mask(draws, rate, outs[0])

    return kernel
