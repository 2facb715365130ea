"""Numba CPU kernels of ops/loss_ops.py (smooth_l1_loss, sparse_cross_entropy and their gradients); see
kernels/reference/loss.py for what each computes."""

from __future__ import annotations

import numpy as np

from ..checks import check_labels
from ..reference.loss import LOG_THRESHOLD, beta_of
from ..reference.model_parallel import class_offset
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit
from .nn import first_out_of_range


@njit
def _smooth_l1(p, label, loss, beta):
    p, label, loss = p.ravel(), label.ravel(), loss.ravel()
    for i in range(loss.size):
        d = abs(p[i] - label[i])
        loss[i] = 0.5 * d * d / beta if d < beta else d - 0.5 * beta


@njit
def _smooth_l1_grad(dy, p, label, dx, beta):
    dy, p, label, dx = dy.ravel(), p.ravel(), label.ravel(), dx.ravel()
    for i in range(dx.size):
        d = p[i] - label[i]
        if abs(d) < beta:
            dx[i] = d / beta * dy[i]
        else:
            dx[i] = (1 if d > 0 else (-1 if d < 0 else 0)) * dy[i]


@njit
def _sparse_ce(p, labels, out, threshold):
    for r in range(p.shape[0]):
        out[r] = -np.log(max(p[r, labels[r]], threshold))


@njit
def _sparse_ce_grad(p, labels, dy, lower, dx, threshold):
    classes = p.shape[1]
    for r in range(p.shape[0]):
        for c in range(classes):
            dx[r, c] = 0
        c = labels[r] - lower
        if 0 <= c < classes:
            dx[r, c] = -dy[r] / max(p[r, c], threshold)


def _beta_factory(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        beta = beta_of(ctx)
        return lambda ins, outs: fn(*ins, outs[0], beta)

    return factory


register_kernel("smooth_l1_loss", "numba")(_beta_factory(_smooth_l1))
register_kernel("smooth_l1_loss_grad", "numba")(_beta_factory(_smooth_l1_grad))


@register_kernel("sparse_cross_entropy", "numba")
def _sparse_ce_factory(ctx: KernelCtx) -> KernelFn:
    classes, depth = ctx.in_descs[0].shape[-1], ctx.attrs["depth"]
    threshold = ctx.in_descs[0].dtype.np.type(LOG_THRESHOLD)

    def kernel(ins, outs):
        labels = ins[1].reshape(-1)
        check_labels(labels, depth, first_out_of_range(labels, depth))
        _sparse_ce(ins[0].reshape(-1, classes), labels, outs[0].reshape(-1), threshold)

    return kernel


def _sparse_ce_grad_factory(ctx: KernelCtx) -> KernelFn:
    classes, depth = ctx.in_descs[0].shape[-1], ctx.attrs["depth"]
    lower, threshold = class_offset(ctx, classes), ctx.in_descs[0].dtype.np.type(LOG_THRESHOLD)

    def kernel(ins, outs):
        labels = ins[1].reshape(-1)
        check_labels(labels, depth, first_out_of_range(labels, depth))
        _sparse_ce_grad(ins[0].reshape(-1, classes), labels, ins[2].reshape(-1), lower, outs[0].reshape(-1, classes),
                        threshold)

    return kernel


register_kernel("sparse_cross_entropy_grad", "numba")(_sparse_ce_grad_factory)
register_kernel("sparse_cross_entropy_ms_grad", "numba")(_sparse_ce_grad_factory)
