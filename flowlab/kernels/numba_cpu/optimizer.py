"""Numba CPU kernels for the hot update ops (SGD, momentum): one pass over the variable, no temporaries.
The other training ops share the NumPy kernels in kernels/reference/optimizer.py."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _sgd(w, diff, lr, scale, l1, l2, wd):  # noqa: ANN001, ANN202
    w, diff = w.ravel(), diff.ravel()
    for i in range(w.size):
        g = diff[i] * scale + l2 * w[i] + wd * w[i]
        if l1 != 0.0:
            g += l1 * np.sign(w[i])
        w[i] -= lr * g


@njit
def _momentum(w, diff, v, lr, beta, scale, l1, l2, wd):  # noqa: ANN001, ANN202
    w, diff, v = w.ravel(), diff.ravel(), v.ravel()
    for i in range(w.size):
        g = diff[i] * scale + l2 * w[i] + wd * w[i]
        if l1 != 0.0:
            g += l1 * np.sign(w[i])
        v[i] = beta * v[i] - lr * g
        w[i] += v[i]


def _scalars(ctx: KernelCtx) -> tuple:
    cast = ctx.in_descs[0].dtype.np.type  # the variable's dtype: one signature per dtype
    return tuple(cast(ctx.attrs[k]) for k in ("scale", "l1", "l2", "weight_decay"))


@register_kernel("sgd_update", "numba")
def _sgd_f(ctx: KernelCtx) -> KernelFn:
    scale, l1, l2, wd = _scalars(ctx)
    cast = ctx.in_descs[0].dtype.np.type
    return lambda ins, outs: _sgd(ins[0], ins[1], cast(ins[2][0]), scale, l1, l2, wd)


@register_kernel("momentum_update", "numba")
def _momentum_f(ctx: KernelCtx) -> KernelFn:
    scale, l1, l2, wd = _scalars(ctx)
    cast = ctx.in_descs[0].dtype.np.type
    beta = cast(ctx.attrs["beta"])
    return lambda ins, outs: _momentum(ins[0], ins[1], ins[2], cast(ins[3][0]), beta, scale, l1, l2, wd)
