"""The LARS update's Numba CPU kernel (see kernels/reference/lars.py)."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit
from .optimizer import _grad_at


@njit
def _lars(w, diff, mom, lr, step, scale, l1, l2, wd, beta, eps, coef, g):
    w, diff, mom = w.ravel(), diff.ravel(), mom.ravel()
    w_sq, g_sq = 0.0, 0.0
    for i in range(w.size):
        g[i] = _grad_at(w, diff, i, scale, l1, l2)
        w_sq += w[i] * w[i]
        g_sq += g[i] * g[i]
    model_norm, diff_norm = np.sqrt(w_sq / w.size), np.sqrt(g_sq / w.size)
    denominator = eps + diff_norm + (wd * model_norm if step != 0 else 0.0)
    local = lr * coef * model_norm / denominator
    for i in range(w.size):
        mom[i] = beta * mom[i] - local * (g[i] + wd * w[i])
        w[i] += mom[i]


@register_kernel("lars_update", "numba")
def _lars_f(ctx: KernelCtx) -> KernelFn:
    a = ctx.attrs
    consts = tuple(float(a[k]) for k in ("scale", "l1", "l2", "weight_decay", "momentum_beta", "epsilon",
                                         "lars_coefficient"))
    g = np.empty(int(np.prod(ctx.in_descs[0].shape)), ctx.in_descs[0].dtype.np)  # OneFlow's model_diff_tmp

    def kernel(ins, outs):
        _lars(ins[0], ins[1], ins[4], float(ins[2][0]), int(ins[3][0]), *consts, g)

    return kernel
