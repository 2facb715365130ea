"""NumPy reference kernels: matmul, bias_add, softmax, sparse softmax cross entropy, and their gradients."""

from __future__ import annotations

import numpy as np

from ..checks import check_labels
from ..registry import KernelCtx, KernelFn, register_kernel


@register_kernel("matmul", "reference")
def _matmul(ctx: KernelCtx) -> KernelFn:
    ta, tb, alpha = ctx.attrs["transpose_a"], ctx.attrs["transpose_b"], ctx.attrs["alpha"]

    def kernel(ins, outs):
        a = np.swapaxes(ins[0], -1, -2) if ta else ins[0]
        b = np.swapaxes(ins[1], -1, -2) if tb else ins[1]
        outs[0][...] = np.matmul(a, b) * alpha if alpha != 1.0 else np.matmul(a, b)

    return kernel


@register_kernel("bias_add", "reference")
def _bias_add(ctx: KernelCtx) -> KernelFn:
    rank = len(ctx.in_descs[0].shape)
    axis = ctx.attrs["axis"] % rank
    shape = tuple(-1 if i == axis else 1 for i in range(rank))

    def kernel(ins, outs):
        outs[0][...] = ins[0] + ins[1].reshape(shape)

    return kernel


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x: np.ndarray) -> np.ndarray:
    """``(x - max) - log(sum(exp(x - max)))``: finite for finite logits, where ``log(softmax(x))`` underflows to
    log(0) = -inf once the logits are ~100 apart (float32). The Numba kernels compute the same expression."""
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


@register_kernel("softmax", "reference")
def _softmax(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        outs[0][...] = softmax(ins[0])

    return kernel


@register_kernel("softmax_grad", "reference")
def _softmax_grad(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        y, dy = ins
        outs[0][...] = y * (dy - (dy * y).sum(axis=-1, keepdims=True))

    return kernel


def checked_labels(labels: np.ndarray, depth: int) -> np.ndarray:
    """Labels as int64 indices with a trailing axis; an out-of-range label is an error (not a wrap-around)."""
    check_labels(labels, depth)
    return labels[..., None].astype(np.int64)


@register_kernel("sparse_softmax_cross_entropy", "reference")
def _sparse_xent(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        logits, labels = ins
        index = checked_labels(labels, logits.shape[-1])
        outs[0][...] = softmax(logits)
        outs[1][...] = -np.take_along_axis(log_softmax(logits), index, axis=-1)[..., 0]

    return kernel


@register_kernel("sparse_softmax_cross_entropy_grad", "reference")
def _sparse_xent_grad(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        prob, labels, dy = ins
        index = checked_labels(labels, prob.shape[-1])
        dx = prob.copy()
        np.put_along_axis(dx, index, np.take_along_axis(dx, index, axis=-1) - 1, axis=-1)
        outs[0][...] = dx * dy[..., None]

    return kernel
