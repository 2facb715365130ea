"""Numba kernels of the model-parallel loss (ops/model_parallel.py); semantics as kernels/reference/
model_parallel.py (a ``_ms`` kernel's slice of the class axis starts at ``class_offset``)."""

from __future__ import annotations

import numpy as np

from ..checks import check_labels
from ..reference.model_parallel import class_offset, slice_bounds, whole_classes_only
from ..reference.two_stage import last_axis_only
from ..registry import FusedCall, KernelCtx, KernelFn, fusable, get_kernel_factory, register_kernel
from ._numba import njit
from .nn import first_out_of_range
from .two_stage import stage


@njit
def _cross_entropy_rows(p, labels, lower, out):
    classes = p.shape[1]
    for r in range(p.shape[0]):
        c = labels[r] - lower
        out[r] = -np.log(p[r, c]) if 0 <= c < classes else 0.0


@njit
def _xent_grad_rows(prob, labels, dy, lower, dx):
    classes = prob.shape[1]
    for r in range(prob.shape[0]):
        for c in range(classes):
            dx[r, c] = prob[r, c] * dy[r]
        c = labels[r] - lower
        if 0 <= c < classes:
            dx[r, c] = (prob[r, c] - 1) * dy[r]  # not p dy - dy: inf - inf for an inf dy


@njit
def _cross_entropy_checked(p, labels, depth, lower, out):
    bad = first_out_of_range(labels, depth)
    if bad < 0:
        _cross_entropy_rows(p, labels, lower, out)
    return bad


@njit
def _xent_grad_checked(prob, labels, dy, depth, lower, dx):
    bad = first_out_of_range(labels, depth)
    if bad < 0:
        _xent_grad_rows(prob, labels, dy, lower, dx)
    return bad


@register_kernel("sparse_cross_entropy_ms", "numba")
def _cross_entropy_ms(ctx: KernelCtx) -> KernelFn:
    classes = ctx.in_descs[0].shape[-1]
    lower, depth = class_offset(ctx, classes), ctx.attrs["depth"]

    def views(ins, outs):
        return ins[0].reshape(-1, classes), ins[1].reshape(-1), depth, lower, outs[0].reshape(-1)

    def kernel(ins, outs):
        p, labels, _, _, out = views(ins, outs)
        check_labels(labels, depth, first_out_of_range(labels, depth))
        _cross_entropy_rows(p, labels, lower, out)

    return fusable(kernel, lambda ins, outs: FusedCall(_cross_entropy_checked, views(ins, outs), True))


@register_kernel("sparse_softmax_cross_entropy_ms_grad", "numba")
def _xent_ms_grad(ctx: KernelCtx) -> KernelFn:
    classes = ctx.in_descs[0].shape[-1]
    lower, depth = class_offset(ctx, classes), ctx.attrs["depth"]

    def views(ins, outs):
        return (ins[0].reshape(-1, classes), ins[1].reshape(-1), ins[2].reshape(-1), depth, lower,
                outs[0].reshape(-1, classes))

    def kernel(ins, outs):
        prob, labels, dy, _, _, dx = views(ins, outs)
        check_labels(labels, depth, first_out_of_range(labels, depth))
        _xent_grad_rows(prob, labels, dy, lower, dx)

    return fusable(kernel, lambda ins, outs: FusedCall(_xent_grad_checked, views(ins, outs), True))


@register_kernel("sparse_softmax_cross_entropy_ms", "numba")
def _xent_ms(ctx: KernelCtx) -> KernelFn:
    return whole_classes_only(ctx, get_kernel_factory("sparse_softmax_cross_entropy", "numba"))


@njit
def _device_stage_rows(x, bounds, out, mask, count):
    for r in range(x.shape[0]):
        for j in range(bounds.size - 1):
            lo, hi = bounds[j], bounds[j + 1]
            m = x[r, lo]
            for c in range(lo + 1, hi):
                v = x[r, c]
                if v > m or (v != v and m == m):  # a NaN is the maximum, as np.max has it
                    m = v
            out[r, j] = m
            n = 0
            for c in range(lo, hi):
                hit = x[r, c] == m
                mask[r, c] = hit
                n += hit
            count[r, j] = n


@register_kernel("reduce_max_device_stage", "numba")
def _device_stage(ctx: KernelCtx) -> KernelFn:
    if not last_axis_only(ctx):  # two_stage_reduce's other axes
        return stage(True, True)(ctx)
    cols, parts = ctx.in_descs[0].shape[-1], ctx.out_descs[0].shape[-1]
    bounds = slice_bounds(cols, parts).astype(np.int64)

    def views(ins, outs):
        x = ins[0].reshape(-1, cols)
        return (x, bounds, *(a.reshape(x.shape[0], -1) for a in outs))

    def kernel(ins, outs):
        _device_stage_rows(*views(ins, outs))

    return fusable(kernel, lambda ins, outs: FusedCall(_device_stage_rows, views(ins, outs)))


@register_kernel("reduce_max_global_stage", "numba")
def _global_stage(ctx: KernelCtx) -> KernelFn:
    """The maximum of each row's device maxima: the device stage's loop over one part (its count is scratch:
    the count of maxima matters to the gradient only, which the device stage's outputs carry)."""
    if not last_axis_only(ctx):
        return stage(True, False)(ctx)
    cols = ctx.in_descs[0].shape[-1]
    rows = int(np.prod(ctx.in_descs[0].shape[:-1]))
    bounds = np.array([0, cols], np.int64)
    count = np.empty((rows, 1), np.int32)

    def views(ins, outs):
        return ins[0].reshape(rows, cols), bounds, outs[0].reshape(rows, 1), outs[1].reshape(rows, cols), count

    def kernel(ins, outs):
        _device_stage_rows(*views(ins, outs))

    return fusable(kernel, lambda ins, outs: FusedCall(_device_stage_rows, views(ins, outs)))
