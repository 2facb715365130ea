"""CUDA kernels of ops/loss_ops.py: smooth_l1_loss, sparse_cross_entropy and their gradients (see
kernels/reference/loss.py for what each computes); labels are range-checked on the device first, as the other
sparse losses' kernels do."""

from __future__ import annotations

import numpy as np

from ..reference.loss import LOG_THRESHOLD, beta_of
from ..reference.model_parallel import class_offset
from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, flat, launch1, log
from .softmax import LabelCheck


@cuda.jit
def _smooth_l1(p, label, loss, beta):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, loss.size, step):
        d = abs(p[i] - label[i])
        loss[i] = 0.5 * d * d / beta if d < beta else d - 0.5 * beta


@cuda.jit
def _smooth_l1_grad(dy, p, label, dx, beta):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dx.size, step):
        d = p[i] - label[i]
        if abs(d) < beta:
            dx[i] = d / beta * dy[i]
        else:
            dx[i] = (1 if d > 0 else (-1 if d < 0 else 0)) * dy[i]


@cuda.jit
def _sparse_ce(p, labels, out, cols, threshold):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for r in range(start, out.size, step):
        out[r] = -log(max(p[r * cols + labels[r]], threshold))


@cuda.jit
def _sparse_ce_grad(p, labels, dy, dx, lower, cols, threshold):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dx.size, step):
        r, c = i // cols, i % cols
        dx[i] = -dy[r] / max(p[i], threshold) if c == labels[r] - lower else 0


def _smooth_factory(kernel):
    def factory(ctx: KernelCtx):
        beta, threads = beta_of(ctx), current_launch().threads

        def run(ins, outs, stream=0):
            launch1(kernel, outs[0].size, threads, stream, *(flat(a) for a in (*ins, *outs)), beta)

        return run

    return factory


register_kernel("smooth_l1_loss", "numba", "gpu")(_smooth_factory(_smooth_l1))
register_kernel("smooth_l1_loss_grad", "numba", "gpu")(_smooth_factory(_smooth_l1_grad))


def _rows_cols(ctx: KernelCtx) -> tuple[int, int]:
    shape = ctx.in_descs[0].shape
    return int(np.prod(shape[:-1])), shape[-1]


@register_kernel("sparse_cross_entropy", "numba", "gpu")
def _sparse_ce_factory(ctx: KernelCtx):
    rows, cols = _rows_cols(ctx)
    threads, check = current_launch().threads, LabelCheck(ctx.attrs["depth"])
    threshold = ctx.in_descs[0].dtype.np.type(LOG_THRESHOLD)

    def run(ins, outs, stream=0):
        check(ins[1], stream)
        launch1(_sparse_ce, rows, threads, stream, flat(ins[0]), flat(ins[1]), flat(outs[0]), cols, threshold)

    return run


def _sparse_ce_grad_factory(ctx: KernelCtx):
    rows, cols = _rows_cols(ctx)
    lower, threads = class_offset(ctx, cols), current_launch().threads
    check, threshold = LabelCheck(ctx.attrs["depth"]), ctx.in_descs[0].dtype.np.type(LOG_THRESHOLD)

    def run(ins, outs, stream=0):
        check(ins[1], stream)
        launch1(_sparse_ce_grad, rows * cols, threads, stream, *(flat(a) for a in (*ins, *outs)), lower, cols,
                threshold)

    return run


register_kernel("sparse_cross_entropy_grad", "numba", "gpu")(_sparse_ce_grad_factory)
register_kernel("sparse_cross_entropy_ms_grad", "numba", "gpu")(_sparse_ce_grad_factory)
