"""The LARS update's CUDA kernel (see kernels/reference/lars.py): the regularized gradient into a buffer, the two
sums of squares on the device (optimizer.py's block reduction, as LAMB's), then the momentum step."""

from __future__ import annotations

import math

import numpy as np

from ..registry import KernelCtx, register_kernel
from ._cuda import blocks, cuda, current_launch, flat, launch1
from .optimizer import _SUM_SQUARES, _prologue, _sum_squares_kernel, effective_grad


@cuda.jit
def _lars_grad(w, diff, g, scale, l1, l2):
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        g[i] = effective_grad(w[i], diff[i], scale, l1, l2)


@cuda.jit
def _lars_apply(w, g, mom, norms, lr_blob, step_blob, wd, beta, eps, coef):
    n = w.size
    model_norm, diff_norm = math.sqrt(norms[0] / n), math.sqrt(norms[1] / n)
    denominator = eps + diff_norm
    if step_blob[0] != 0:  # LarsUpdateKernelUtil: the decay term from step 1 on
        denominator += wd * model_norm
    local = float(lr_blob[0]) * coef * model_norm / denominator
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        mom[i] = beta * mom[i] - local * (g[i] + wd * w[i])
        w[i] += mom[i]


@register_kernel("lars_update", "numba", "gpu")
def _lars_f(ctx: KernelCtx):
    a, launch = ctx.attrs, current_launch()
    scale, l1, l2 = _prologue(ctx)
    wd, beta, eps, coef = (float(a[k]) for k in ("weight_decay", "momentum_beta", "epsilon", "lars_coefficient"))
    sum_squares = _SUM_SQUARES.setdefault(launch.threads, _sum_squares_kernel(launch.threads))
    n = int(np.prod(ctx.in_descs[0].shape))
    g, norms, zeros = cuda.device_array(n, ctx.in_descs[0].dtype.np), cuda.device_array(2, np.float64), np.zeros(2)

    def run(ins, outs, stream=0):
        w, diff, lr, step, mom = ins
        launch1(_lars_grad, n, launch.threads, stream, flat(w), flat(diff), g, scale, l1, l2)
        norms.copy_to_device(zeros, stream=stream)
        grid = blocks(n, launch.threads, launch.max_blocks)
        sum_squares[grid, launch.threads, stream](flat(w), norms[0:1])
        sum_squares[grid, launch.threads, stream](g, norms[1:2])
        launch1(_lars_apply, n, launch.threads, stream, flat(w), g, flat(mom), norms, lr, step, wd, beta, eps, coef)

    return run
