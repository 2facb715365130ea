"""Numba CPU kernels of ops/gather_slice_ops.py: gather, unsorted_segment_sum_like (gather's gradient), slice and
slice_grad; kernels/reference/gather_slice.py says what each computes."""

from __future__ import annotations

import numpy as np

from ..checks import raise_out_of_range
from ..registry import FusedCall, KernelCtx, KernelFn, fusable, register_kernel
from ._numba import njit
from .array import _copy_nd
from .nn import first_out_of_range


@njit
def _gather3(params, ids, out):
    # params (outer, n, inner), ids (k,), out (outer, k, inner)
    for o in range(params.shape[0]):
        for j in range(ids.size):
            for i in range(params.shape[2]):
                out[o, j, i] = params[o, ids[j], i]


@njit
def _scatter_add3(data, ids, out):
    out[...] = 0
    for o in range(data.shape[0]):
        for j in range(ids.size):
            for i in range(data.shape[2]):
                out[o, ids[j], i] += data[o, j, i]


@njit
def _gather_checked(params, ids, out):
    bad = first_out_of_range(ids, params.shape[1])
    if bad < 0:
        _gather3(params, ids, out)
    return bad


@njit
def _scatter_add_checked(data, ids, out):
    bad = first_out_of_range(ids, out.shape[1])
    if bad < 0:
        _scatter_add3(data, ids, out)
    return bad


def _three_d(shape: tuple[int, ...], axis: int, middle: int) -> tuple[int, int, int]:
    return int(np.prod(shape[:axis])), middle, int(np.prod(shape[axis + 1:]))


@njit
def _gather_slice_checked(params, ids, out, lower, logical):
    # this device holds rows [lower, lower + params.shape[1]) of ``logical``: others' indices give zeros
    bad = first_out_of_range(ids, logical)
    if bad < 0:
        rows = params.shape[1]
        for o in range(params.shape[0]):
            for j in range(ids.size):
                r = ids[j] - lower
                for i in range(params.shape[2]):
                    out[o, j, i] = params[o, r, i] if 0 <= r < rows else 0
    return bad


@register_kernel("gather", "numba")
def _gather_f(ctx: KernelCtx) -> KernelFn:
    from ..reference.gather_slice import gather_rows

    params = ctx.in_descs[0].shape
    axis = ctx.attrs["axis"] % len(params)
    k = int(np.prod(ctx.in_descs[1].shape))
    p3, o3 = _three_d(params, axis, params[axis]), _three_d(params, axis, k)
    lower, rows, logical = gather_rows(ctx)
    if rows != logical:
        whole = (*params[:axis], logical, *params[axis + 1:])

        def sliced(ins, outs):
            bad = _gather_slice_checked(ins[0].reshape(p3), ins[1].reshape(-1), outs[0].reshape(o3), lower, logical)
            raise_out_of_range(ins[1], bad, logical, "index", axis, "in", whole)

        return sliced

    def kernel(ins, outs):
        bad = _gather_checked(ins[0].reshape(p3), ins[1].reshape(-1), outs[0].reshape(o3))
        raise_out_of_range(ins[1], bad, params[axis], "index", axis, "in", params)

    return fusable(kernel, lambda ins, outs: FusedCall(
        _gather_checked, (ins[0].reshape(p3), ins[1].reshape(-1), outs[0].reshape(o3)), True))


@register_kernel("unsorted_segment_sum_like", "numba")
def _segment_sum_f(ctx: KernelCtx) -> KernelFn:
    from ..reference.segment import sliced_segment_sum

    sliced = sliced_segment_sum(ctx)  # a device holding a slice of the segments
    if sliced is not None:
        return sliced
    like = ctx.out_descs[0].shape
    axis = ctx.attrs["axis"] % len(like)
    k = int(np.prod(ctx.in_descs[1].shape))
    d3, o3 = _three_d(like, axis, k), _three_d(like, axis, like[axis])

    def kernel(ins, outs):
        bad = _scatter_add_checked(ins[0].reshape(d3), ins[1].reshape(-1), outs[0].reshape(o3))
        raise_out_of_range(ins[1], bad, like[axis], "segment id", axis, "like", like)

    return fusable(kernel, lambda ins, outs: FusedCall(
        _scatter_add_checked, (ins[0].reshape(d3), ins[1].reshape(-1), outs[0].reshape(o3)), True))


@register_kernel("slice", "numba")
def _slice_f(ctx: KernelCtx) -> KernelFn:
    from ..reference.gather_slice import slices

    index = slices(ctx, ctx.in_descs[0].shape)
    return lambda ins, outs: _copy_nd(ins[0][index], outs[0])


@register_kernel("slice_grad", "numba")
def _slice_grad_f(ctx: KernelCtx) -> KernelFn:
    from ..reference.gather_slice import slices

    index = slices(ctx, ctx.out_descs[0].shape)

    def kernel(ins, outs):
        outs[0].fill(0)
        _copy_nd(ins[0], outs[0][index])

    return kernel
