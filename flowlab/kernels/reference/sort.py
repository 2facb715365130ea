"""NumPy reference kernels of the sorting ops (ops/sort_ops.py): arg_sort, sort, top_k and in_top_k, on the last
axis. OneFlow's CPU kernels sort with a comparator that puts equal values in index order, in both directions
(arg_sort_kernel.cpp, top_k_kernel.cpp); a stable sort gives that order."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def stable_argsort(x: np.ndarray, descending: bool) -> np.ndarray:
    """Indices sorting the last axis, equal values in index order. Descending: a stable ascending sort of the
    reversed rows puts equal values in reversed index order; reversing its result restores index order."""
    if not descending:
        return np.argsort(x, axis=-1, kind="stable")
    n = x.shape[-1]
    return (n - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable"))[..., ::-1]


@register_kernel("arg_sort", "reference")
def _arg_sort(ctx: KernelCtx) -> KernelFn:
    descending = ctx.attrs["direction"] == "DESCENDING"

    def kernel(ins, outs):
        outs[0][...] = stable_argsort(ins[0], descending)

    return kernel


@register_kernel("sort", "reference")
def _sort(ctx: KernelCtx) -> KernelFn:
    descending = ctx.attrs["direction"] == "DESCENDING"

    def kernel(ins, outs):
        outs[0][...] = np.take_along_axis(ins[0], stable_argsort(ins[0], descending), axis=-1)

    return kernel


@register_kernel("top_k", "reference")
def _top_k(ctx: KernelCtx) -> KernelFn:
    k = ctx.out_descs[0].shape[-1]

    def kernel(ins, outs):
        outs[0][...] = stable_argsort(ins[0], True)[..., :k]

    return kernel


def in_top_k_rows(targets: np.ndarray, predictions: np.ndarray, k: int) -> np.ndarray:
    """in_top_k_kernel_util.cpp: fewer than k classes strictly more probable than the target's; false where the
    target is no class or the row holds a non-finite prediction ("cannot say")."""
    n, classes = predictions.shape
    t = targets.astype(np.int64)
    valid = (t >= 0) & (t < classes)
    target_pred = predictions[np.arange(n), np.where(valid, t, 0)]
    more = (predictions > target_pred[:, None]).sum(axis=1)
    finite = np.isfinite(predictions).all(axis=1)
    return valid & finite & (more < k)


@register_kernel("in_top_k", "reference")
def _in_top_k(ctx: KernelCtx) -> KernelFn:
    k = ctx.attrs["k"]

    def kernel(ins, outs):
        outs[0][...] = in_top_k_rows(ins[0], ins[1], k)

    return kernel
