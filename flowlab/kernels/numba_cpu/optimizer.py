"""Numba CPU kernels for the hot update ops (SGD, momentum): one pass over the variable, no temporaries.
The other training ops share the NumPy kernels in kernels/reference/optimizer.py."""

from __future__ import annotations

import numpy as np

from ..registry import FusedCall, KernelCtx, KernelFn, fusable, register_kernel
from ._numba import njit


@njit
def _sgd(w, diff, lr, scale, l1, l2, wd):  # noqa: ANN001, ANN202
    w, diff = w.ravel(), diff.ravel()
    for i in range(w.size):
        g = diff[i] * scale
        if l1 != 0.0:  # a zero coefficient adds nothing, not 0 * inf = NaN (as the reference)
            g += l1 * np.sign(w[i])
        if l2 != 0.0:
            g += l2 * w[i]
        if wd != 0.0:
            w[i] -= lr * wd * w[i]
        w[i] -= lr * g


@njit
def _momentum(w, diff, v, lr, beta, scale, l1, l2, wd):  # noqa: ANN001, ANN202
    w, diff, v = w.ravel(), diff.ravel(), v.ravel()
    for i in range(w.size):
        g = diff[i] * scale
        if l1 != 0.0:  # a zero coefficient adds nothing, not 0 * inf = NaN (as the reference)
            g += l1 * np.sign(w[i])
        if l2 != 0.0:
            g += l2 * w[i]
        if wd != 0.0:
            g += wd * w[i]
        v[i] = beta * v[i] - lr * g
        w[i] += v[i]


@njit
def _sgd_lr(w, diff, lr, scale, l1, l2, wd):  # noqa: ANN001, ANN202
    _sgd(w, diff, lr[0], scale, l1, l2, wd)  # lr: the learning-rate blob, read when the act runs


@njit
def _momentum_lr(w, diff, v, lr, beta, scale, l1, l2, wd):  # noqa: ANN001, ANN202
    _momentum(w, diff, v, lr[0], beta, scale, l1, l2, wd)


def _scalars(ctx: KernelCtx) -> tuple:
    cast = ctx.in_descs[0].dtype.np.type  # the variable's dtype: one signature per dtype
    return tuple(cast(ctx.attrs[k]) for k in ("scale", "l1", "l2", "weight_decay"))


@register_kernel("sgd_update", "numba")
def _sgd_f(ctx: KernelCtx) -> KernelFn:
    scale, l1, l2, wd = _scalars(ctx)
    cast = ctx.in_descs[0].dtype.np.type
    def kernel(ins, outs):  # noqa: ANN001, ANN202
        _sgd(ins[0], ins[1], cast(ins[2][0]), scale, l1, l2, wd)

    if ctx.in_descs[2].dtype != ctx.in_descs[0].dtype:
        return kernel
    return fusable(kernel, lambda ins, outs: FusedCall(_sgd_lr, (ins[0], ins[1], ins[2], scale, l1, l2, wd)))


@register_kernel("momentum_update", "numba")
def _momentum_f(ctx: KernelCtx) -> KernelFn:
    scale, l1, l2, wd = _scalars(ctx)
    cast = ctx.in_descs[0].dtype.np.type
    beta = cast(ctx.attrs["beta"])
    def kernel(ins, outs):  # noqa: ANN001, ANN202
        _momentum(ins[0], ins[1], ins[2], cast(ins[3][0]), beta, scale, l1, l2, wd)

    if ctx.in_descs[3].dtype != ctx.in_descs[0].dtype:
        return kernel
    return fusable(kernel, lambda ins, outs: FusedCall(_momentum_lr, (ins[0], ins[1], ins[2], ins[3], beta, scale, l1,
                                                                      l2, wd)))
