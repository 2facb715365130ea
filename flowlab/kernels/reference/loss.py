"""NumPy reference kernels of ops/loss_ops.py (the dense-label softmax and the sigmoid cross entropies at the end):
smooth_l1_loss and its gradient (smooth_l1_loss_kernel.cpp), and
sparse_cross_entropy's gradients (sparse_cross_entropy_kernel_util.cpp: -dy / max(p, 1e-20) at the label, 0
elsewhere); sparse_cross_entropy's forward is -log(max(p, 1e-20)) (OneFlow's SafeLog). A ``_ms`` kernel sees its
device's slice of the class axis (class_offset); a label outside it adds nothing there."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from .model_parallel import class_offset, local_labels
from .nn import log_softmax, softmax

LOG_THRESHOLD = 1e-20  # OneFlow's MaxWithLogThreshold (kernel_util.cuh)


def beta_of(ctx: KernelCtx):
    # a float attr in OneFlow (float32), compared with the blob's values in their dtype
    return ctx.out_descs[0].dtype.np.type(np.float32(ctx.attrs["beta"]))


def smooth_l1(p: np.ndarray, label: np.ndarray, beta) -> np.ndarray:
    d = np.abs(p - label)
    with np.errstate(divide="ignore", invalid="ignore"):  # beta 0: the quadratic branch is never taken
        return np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)


def smooth_l1_grad(dy: np.ndarray, p: np.ndarray, label: np.ndarray, beta) -> np.ndarray:
    d = p - label
    with np.errstate(divide="ignore", invalid="ignore"):
        # OneFlow's sign is (d > 0) - (d < 0): 0 for a NaN difference, not np.sign's NaN
        return np.where(np.abs(d) < beta, d / beta, (d > 0).astype(d.dtype) - (d < 0)) * dy


@register_kernel("smooth_l1_loss", "reference")
def _smooth_l1(ctx: KernelCtx) -> KernelFn:
    beta = beta_of(ctx)

    def kernel(ins, outs):
        outs[0][...] = smooth_l1(*ins, beta)

    return kernel


@register_kernel("smooth_l1_loss_grad", "reference")
def _smooth_l1_grad(ctx: KernelCtx) -> KernelFn:
    beta = beta_of(ctx)

    def kernel(ins, outs):
        outs[0][...] = smooth_l1_grad(*ins, beta)

    return kernel


@register_kernel("sparse_cross_entropy", "reference")
def _sparse_ce(ctx: KernelCtx) -> KernelFn:
    classes, depth = ctx.in_descs[0].shape[-1], ctx.attrs["depth"]

    def kernel(ins, outs):
        prediction, labels = ins
        rows, cols = local_labels(labels, depth, 0, classes)
        p = prediction.reshape(-1, classes)[rows, cols]
        outs[0].reshape(-1)[rows] = -np.log(np.maximum(p, p.dtype.type(LOG_THRESHOLD)))

    return kernel


def _sparse_ce_grad(ctx: KernelCtx) -> KernelFn:
    classes, depth = ctx.in_descs[0].shape[-1], ctx.attrs["depth"]
    lower = class_offset(ctx, classes)

    def kernel(ins, outs):
        prediction, labels, dy = ins
        rows, cols = local_labels(labels, depth, lower, classes)
        dx = outs[0].reshape(-1, classes)
        dx[...] = 0
        p = prediction.reshape(-1, classes)[rows, cols]
        dx[rows, cols] = -dy.reshape(-1)[rows] / np.maximum(p, p.dtype.type(LOG_THRESHOLD))

    return kernel


register_kernel("sparse_cross_entropy_grad", "reference")(_sparse_ce_grad)
register_kernel("sparse_cross_entropy_ms_grad", "reference")(_sparse_ce_grad)


@register_kernel("softmax_cross_entropy", "reference")
def _softmax_xent(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        logits, labels = ins
        outs[0][...] = softmax(logits)
        outs[1][...] = -(labels * log_softmax(logits)).sum(-1).reshape(outs[1].shape)

    return kernel


@register_kernel("softmax_cross_entropy_grad", "reference")
def _softmax_xent_grad(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        prob, labels, dy = ins
        # OneFlow's ComputeDiffWithSoftmax: dy * (p - l), also where a row of l does not sum to 1 (the loss's
        # derivative would be p * sum(l) - l there; OneFlow and TensorFlow assume distributions)
        outs[0][...] = (prob - labels) * dy.reshape(prob.shape[:-1] + (1,))

    return kernel


@register_kernel("sigmoid_cross_entropy", "reference")
def _sigmoid_xent(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        x, z = ins  # the stable form: max(x, 0) - x z + log(1 + exp(-|x|))
        outs[0][...] = np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))

    return kernel


@register_kernel("sigmoid_cross_entropy_grad", "reference")
def _sigmoid_xent_grad(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        x, z, dy = ins
        outs[0][...] = (1 / (1 + np.exp(-x)) - z) * dy

    return kernel
