"""NumPy reference kernels of ops/sort_ops.py: stable sorts on the last axis (ties keep the lower index first, as
OneFlow's comparators); descending sorts order by the reversed key, so ties still keep their order."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def sort_indices(x: np.ndarray, descending: bool) -> np.ndarray:
    if not descending:
        return np.argsort(x, axis=-1, kind="stable")
    key = ~x if x.dtype.kind in "iu" else -x  # ~ reverses integer order without overflow
    return np.argsort(key, axis=-1, kind="stable")


@register_kernel("arg_sort", "reference")
def _arg_sort(ctx: KernelCtx) -> KernelFn:
    descending = ctx.attrs["direction"] == "DESCENDING"

    def kernel(ins, outs):
        outs[0][...] = sort_indices(ins[0], descending)

    return kernel


@register_kernel("sort", "reference")
def _sort(ctx: KernelCtx) -> KernelFn:
    descending = ctx.attrs["direction"] == "DESCENDING"

    def kernel(ins, outs):
        outs[0][...] = np.take_along_axis(ins[0], sort_indices(ins[0], descending), axis=-1)

    return kernel


@register_kernel("top_k", "reference")
def _top_k(ctx: KernelCtx) -> KernelFn:
    k = ctx.out_descs[0].shape[-1]

    def kernel(ins, outs):
        outs[0][...] = sort_indices(ins[0], True)[..., :k]

    return kernel


@register_kernel("in_top_k", "reference")
def _in_top_k(ctx: KernelCtx) -> KernelFn:
    k = ctx.attrs["k"]

    def kernel(ins, outs):
        targets, pred = ins
        n, classes = pred.shape
        valid = (targets >= 0) & (targets < classes)
        target_pred = pred[np.arange(n), np.where(valid, targets, 0)]
        above = np.sum(pred > target_pred[:, None], axis=1)
        finite = np.all(np.isfinite(pred), axis=1)  # OneFlow's kernel: any non-finite prediction says nothing
        outs[0][...] = valid & finite & (above < k)

    return kernel
