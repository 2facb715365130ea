"""NumPy reference kernels of ops/gather_slice_ops.py: gather (and unsorted_segment_sum_like, its gradient),
slice and slice_grad."""

from __future__ import annotations

import numpy as np

from ...ir.sbp import balanced_split
from ..checks import check_indices
from ..registry import KernelCtx, KernelFn, register_kernel


def gather_rows(ctx: KernelCtx) -> tuple[int, int, int]:
    """(lower, rows, logical): this device's rows of ``in`` on the gather axis are [lower, lower + rows) of
    ``logical`` (OneFlow's BalancedSplitter offset; lower 0 where the device holds the whole axis)."""
    shape = ctx.in_descs[0].shape
    rows = shape[ctx.attrs["axis"] % len(shape)]
    logical = ctx.attrs.get("logical_axis_size") or rows
    if rows == logical or ctx.parallel_num == 1:
        return 0, rows, rows
    parts = balanced_split(logical, ctx.parallel_num)
    if parts[ctx.parallel_id] != rows:
        raise ValueError(f"gather {ctx.op.name!r}: device {ctx.parallel_id} of {ctx.parallel_num} holds {rows} of "
                         f"{logical} rows; its slice has {parts[ctx.parallel_id]}")
    return sum(parts[:ctx.parallel_id]), rows, logical


@register_kernel("gather", "reference")
def _gather(ctx: KernelCtx) -> KernelFn:
    shape = ctx.in_descs[0].shape
    axis = ctx.attrs["axis"] % len(shape)
    lower, rows, logical = gather_rows(ctx)

    def kernel(ins, outs):
        # Indices in [0, n) as OneFlow's gather; np.take alone would wrap negative ones around.
        check_indices(ins[1], logical, "index", axis, "in", (*shape[:axis], logical, *shape[axis + 1:]))
        if rows == logical:
            outs[0][...] = np.take(ins[0], ins[1], axis=axis)
            return
        local = ins[1] - lower  # another device's rows give zeros here: the sum over devices is the gather
        mine = (local >= 0) & (local < rows)
        picked = np.take(ins[0], np.where(mine, local, 0), axis=axis)
        mask = mine.reshape((1,) * axis + mine.shape + (1,) * (len(shape) - axis - 1))
        outs[0][...] = np.where(mask, picked, 0)

    return kernel


@register_kernel("unsorted_segment_sum_like", "reference")
def _segment_sum(ctx: KernelCtx) -> KernelFn:
    from .segment import sliced_segment_sum

    sliced = sliced_segment_sum(ctx)  # a device holding a slice of the segments
    if sliced is not None:
        return sliced
    like = ctx.out_descs[0].shape
    axis = ctx.attrs["axis"] % len(like)

    def kernel(ins, outs):
        data, ids, out = ins[0], ins[1], outs[0]
        check_indices(ids, like[axis], "segment id", axis, "like", like)
        out[...] = 0
        moved = np.moveaxis(out, axis, 0)
        flat_ids = ids.reshape(-1)
        data_moved = np.moveaxis(data.reshape(data.shape[:axis] + (flat_ids.size,) + data.shape[axis + ids.ndim:]),
                                 axis, 0)
        np.add.at(moved, flat_ids, data_moved)

    return kernel


def slices(ctx: KernelCtx, shape: tuple[int, ...]) -> tuple[slice, ...]:
    """The attr's Python slices, normalized to start >= 0; a backward slice to the front gets stop None
    (``indices()`` gives stop -1 there, which NumPy would read as the last element)."""
    out = []
    for s, d in zip(ctx.attrs["slice_tup_list"], shape):
        start, stop, step = slice(*s).indices(d)
        out.append(slice(start, None if stop < 0 else stop, step))
    return tuple(out)


@register_kernel("slice", "reference")
def _slice(ctx: KernelCtx) -> KernelFn:
    index = slices(ctx, ctx.in_descs[0].shape)

    def kernel(ins, outs):
        outs[0][...] = ins[0][index]

    return kernel


@register_kernel("slice_grad", "reference")
def _slice_grad(ctx: KernelCtx) -> KernelFn:
    index = slices(ctx, ctx.out_descs[0].shape)

    def kernel(ins, outs):
        outs[0][...] = 0
        outs[0][index] = ins[0]

    return kernel
