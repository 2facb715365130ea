"""The LARS update (ops/optimizer_ops.py lars_update; OneFlow's LarsUpdateKernelUtil), NumPy reference."""

from __future__ import annotations

import math

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from .optimizer import effective_grad


def lars_local_rate(lr: float, coefficient: float, epsilon: float, weight_decay: float, step: int,
                    model_sq: float, diff_sq: float, n: int) -> float:
    """LarsUpdateKernelUtil: root-mean-square norms (sqrt(dot / n)); the weight-decay term joins the denominator
    from step 1 on (step 0 leaves it out)."""
    model_norm, diff_norm = math.sqrt(model_sq / n), math.sqrt(diff_sq / n)
    denominator = epsilon + diff_norm + (weight_decay * model_norm if step != 0 else 0.0)
    return lr * coefficient * model_norm / denominator


@register_kernel("lars_update", "reference")
def _lars(ctx: KernelCtx) -> KernelFn:
    a = ctx.attrs
    beta, eps, coef, wd, grad = a["momentum_beta"], a["epsilon"], a["lars_coefficient"], a["weight_decay"], \
        effective_grad(ctx)

    def kernel(ins, outs):
        w, lr, step, mom = ins[0], float(ins[2][0]), int(ins[3][0]), ins[4]
        g = grad(w, ins[1])
        local = lars_local_rate(lr, coef, eps, wd, step, float(np.sum(w * w)), float(np.sum(g * g)), w.size)
        mom *= beta  # LarsUpdateFunctor: momentum = beta * momentum - local_lr * (g + wd * w); w += momentum
        mom -= local * (g + wd * w)
        w += mom

    return kernel
