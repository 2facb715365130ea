"""Numba CPU kernels of ops/loss_ops.py (smooth_l1_loss, sparse_cross_entropy, the dense-label softmax and
sigmoid cross entropies and their gradients); see
kernels/reference/loss.py for what each computes."""

from __future__ import annotations

import math as _m

import numpy as np

from ..checks import check_labels
from ..reference.loss import LOG_THRESHOLD, beta_of
from ..reference.model_parallel import class_offset
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit
from .nn import first_out_of_range, softmax_row


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


@njit
def _softmax_xent_rows(x, labels, prob, out):
    for r in range(x.shape[0]):
        m, s = softmax_row(x, prob, r)
        log_s = _m.log(s)
        loss = 0.0
        for c in range(x.shape[1]):
            loss += labels[r, c] * ((x[r, c] - m) - log_s)  # log_softmax, as kernels/reference/nn.py
        out[r] = -loss


@njit
def _softmax_xent_grad_rows(prob, labels, dy, dx):
    # OneFlow's ComputeDiffWithSoftmax: dy * (p - l), whatever the labels sum to (kernels/reference/loss.py)
    for r in range(prob.shape[0]):
        for c in range(prob.shape[1]):
            dx[r, c] = (prob[r, c] - labels[r, c]) * dy[r]


@njit
def _sigmoid_xent(x, z, out):
    x, z, out = x.ravel(), z.ravel(), out.ravel()
    for i in range(out.size):
        out[i] = max(x[i], 0.0) - x[i] * z[i] + _m.log1p(_m.exp(-abs(x[i])))


@njit
def _sigmoid_xent_grad(x, z, dy, dx):
    x, z, dy, dx = x.ravel(), z.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = (1.0 / (1.0 + _m.exp(-x[i])) - z[i]) * dy[i]


@register_kernel("softmax_cross_entropy", "numba")
def _softmax_xent_f(ctx: KernelCtx) -> KernelFn:
    c = ctx.in_descs[0].shape[-1]
    return lambda ins, outs: _softmax_xent_rows(ins[0].reshape(-1, c), ins[1].reshape(-1, c),
                                                outs[0].reshape(-1, c), outs[1].reshape(-1))


@register_kernel("softmax_cross_entropy_grad", "numba")
def _softmax_xent_grad_f(ctx: KernelCtx) -> KernelFn:
    c = ctx.in_descs[0].shape[-1]
    return lambda ins, outs: _softmax_xent_grad_rows(ins[0].reshape(-1, c), ins[1].reshape(-1, c),
                                                     ins[2].reshape(-1), outs[0].reshape(-1, c))


@register_kernel("sigmoid_cross_entropy", "numba")
def _sigmoid_xent_f(ctx: KernelCtx) -> KernelFn:
    return lambda ins, outs: _sigmoid_xent(ins[0], ins[1], outs[0])


@register_kernel("sigmoid_cross_entropy_grad", "numba")
def _sigmoid_xent_grad_f(ctx: KernelCtx) -> KernelFn:
    return lambda ins, outs: _sigmoid_xent_grad(ins[0], ins[1], ins[2], outs[0])
