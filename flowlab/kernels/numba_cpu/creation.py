"""Numba CPU kernels of ops/creation_ops.py (see kernels/reference/creation.py)."""

from __future__ import annotations

import numpy as np

from ..reference.creation import range_values, tril_params
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _copy(values, out):
    out = out.ravel()
    for i in range(out.size):
        out[i] = values[i]


@register_kernel("range", "numba")
def _range(ctx: KernelCtx) -> KernelFn:
    values = range_values(ctx)  # made once: the op has no input
    return lambda ins, outs: _copy(values, outs[0])


@register_kernel("reverse", "numba")
def _reverse(ctx: KernelCtx) -> KernelFn:
    axes = tuple(ctx.attrs["axis"])

    def kernel(ins, outs):
        outs[0][...] = np.flip(ins[0], axes)  # a strided copy: NumPy's is the fast path

    return kernel


@njit
def _tril(x, diagonal, fill, scale, out):
    # x, out (batch, m, n)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            for j in range(x.shape[2]):
                out[b, i, j] = x[b, i, j] * scale if j <= i + diagonal else fill


def _tril_factory(ctx: KernelCtx) -> KernelFn:
    diagonal, fill, scale = tril_params(ctx)
    m, n = ctx.in_descs[0].shape[-2:]
    return lambda ins, outs: _tril(ins[0].reshape(-1, m, n), diagonal, fill, scale, outs[0].reshape(-1, m, n))


register_kernel("tril", "numba")(_tril_factory)
register_kernel("fused_scale_tril", "numba")(_tril_factory)
