"""NumPy kernels of the model-parallel loss (ops/model_parallel.py).

A ``_ms`` kernel sees one device's slice of the class axis; it starts at ``class_offset`` (OneFlow's
BalancedSplitter(depth, parallel_num).At(parallel_id).begin(), 0 for a whole axis). A label outside the slice
belongs to another device: this one adds nothing for it (its loss term is 0, its gradient row is prob * dy).
"""

from __future__ import annotations

import numpy as np

from ...ir.sbp import balanced_split
from ..checks import check_labels
from ..registry import KernelCtx, KernelFn, get_kernel_factory, register_kernel
from .two_stage import last_axis_only, stage


def class_offset(ctx: KernelCtx, classes: int) -> int:
    """Where this task's ``classes`` columns start on the logical class axis of ``depth``."""
    depth = ctx.attrs["depth"]
    if classes == depth or ctx.parallel_num == 1:
        return 0
    parts = balanced_split(depth, ctx.parallel_num)
    if parts[ctx.parallel_id] != classes:
        raise ValueError(f"{ctx.op.op_type} {ctx.op.name!r}: device {ctx.parallel_id} of {ctx.parallel_num} holds "
                         f"{classes} of {depth} classes; its slice of the class axis has {parts[ctx.parallel_id]}")
    return sum(parts[:ctx.parallel_id])


def local_labels(labels: np.ndarray, depth: int, lower: int, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows whose label falls in [lower, lower + classes), those labels as local column indices)."""
    check_labels(labels, depth)
    flat = labels.reshape(-1).astype(np.int64) - lower
    rows = np.flatnonzero((flat >= 0) & (flat < classes))
    return rows, flat[rows]


@register_kernel("sparse_cross_entropy_ms", "reference")
def _cross_entropy_ms(ctx: KernelCtx) -> KernelFn:
    classes = ctx.in_descs[0].shape[-1]
    lower, depth = class_offset(ctx, classes), ctx.attrs["depth"]

    def kernel(ins, outs):
        prediction, labels = ins
        rows, cols = local_labels(labels, depth, lower, classes)
        out = outs[0].reshape(-1)
        out[...] = 0
        with np.errstate(divide="ignore"):  # log(0) = -inf, as the Numba kernel gives
            out[rows] = -np.log(prediction.reshape(-1, classes)[rows, cols])

    return kernel


@register_kernel("sparse_softmax_cross_entropy_ms_grad", "reference")
def _xent_ms_grad(ctx: KernelCtx) -> KernelFn:
    classes = ctx.in_descs[0].shape[-1]
    lower, depth = class_offset(ctx, classes), ctx.attrs["depth"]

    def kernel(ins, outs):
        prob, labels, dy = ins
        rows, cols = local_labels(labels, depth, lower, classes)
        p, d = prob.reshape(-1, classes), dy.reshape(-1)
        dx = outs[0].reshape(-1, classes)
        dx[...] = p * d[:, None]
        dx[rows, cols] = (p[rows, cols] - 1) * d[rows]  # not p dy - dy: inf - inf for an inf dy

    return kernel


@register_kernel("sparse_softmax_cross_entropy_ms", "reference")
def _xent_ms(ctx: KernelCtx) -> KernelFn:
    return whole_classes_only(ctx, get_kernel_factory("sparse_softmax_cross_entropy", "reference"))


def whole_classes_only(ctx: KernelCtx, plain) -> KernelFn:
    """The undecomposed op on a whole class axis is the plain loss; on a slice its softmax would be the slice's,
    so only SplitSparseSoftmaxCrossEntropyOpPass's decomposition runs it split (the pass runs on every job)."""
    classes, depth = ctx.in_descs[0].shape[-1], ctx.attrs["depth"]
    if classes != depth:
        raise ValueError(f"sparse_softmax_cross_entropy_ms {ctx.op.name!r} holds {classes} of {depth} classes: split "
                         "logits are computed by the ops SplitSparseSoftmaxCrossEntropyOpPass makes, not by this op")
    return plain(ctx)


def slice_bounds(cols: int, parts: int) -> np.ndarray:
    return np.cumsum((0, *balanced_split(cols, parts)))


@register_kernel("reduce_max_device_stage", "reference")
def _device_stage(ctx: KernelCtx) -> KernelFn:
    if not last_axis_only(ctx):  # two_stage_reduce's other axes
        return stage(True, True)(ctx)
    cols, parts = ctx.in_descs[0].shape[-1], ctx.out_descs[0].shape[-1]
    bounds = slice_bounds(cols, parts)  # one device's piece: one part; the logical blob: device_num parts

    def kernel(ins, outs):
        x = ins[0].reshape(-1, cols)
        out, mask, count = (a.reshape(x.shape[0], -1) for a in outs)
        for j, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            m = x[:, lo:hi].max(axis=1)
            out[:, j] = m
            mask[:, lo:hi] = x[:, lo:hi] == m[:, None]
            count[:, j] = mask[:, lo:hi].sum(axis=1)

    return kernel


@register_kernel("reduce_max_global_stage", "reference")
def _global_stage(ctx: KernelCtx) -> KernelFn:
    if not last_axis_only(ctx):
        return stage(True, False)(ctx)
    cols = ctx.in_descs[0].shape[-1]

    def kernel(ins, outs):
        x = ins[0].reshape(-1, cols)
        m = x.max(axis=1)
        outs[0].reshape(-1)[...] = m
        outs[1].reshape(-1, cols)[...] = x == m[:, None]

    return kernel
