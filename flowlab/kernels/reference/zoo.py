"""NumPy reference kernels of the ops OneFlow's model zoo needs: one_hot, batch_gather and its gradient
unsorted_batch_segment_sum, add_n, tuple_identity (identity_n), and the N-d constant pad and its gradient."""

from __future__ import annotations

import numpy as np

from ..checks import check_indices
from ..registry import KernelCtx, KernelFn, register_kernel


def one_hot_values(ctx: KernelCtx) -> tuple[float | int, float | int]:
    """(on, off): the floating attrs for a floating output, the integer ones otherwise (one_hot_kernel.cpp)."""
    a = ctx.attrs
    if ctx.out_descs[0].dtype.is_floating:
        return a["floating_on_value"], a["floating_off_value"]
    return a["integer_on_value"], a["integer_off_value"]


@register_kernel("one_hot", "reference")
def _one_hot(ctx: KernelCtx) -> KernelFn:
    out_shape, depth = ctx.out_descs[0].shape, ctx.attrs["depth"]
    on, off = one_hot_values(ctx)

    def kernel(ins, outs):
        ids = ins[0]
        check_indices(ids, depth, "index", len(out_shape) - 1, "out", out_shape)
        out = outs[0].reshape(-1, depth)
        out[...] = off
        out[np.arange(ids.size), ids.reshape(-1)] = on

    return kernel


def batch_dims(ids_shape: tuple[int, ...], data_shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(batch, rows, inner): ``data`` as (batch entries, rows along the gathered axis, elements per row)."""
    k = len(ids_shape) - 1
    return int(np.prod(data_shape[:k])), data_shape[k], int(np.prod(data_shape[k + 1:]))


@register_kernel("batch_gather", "reference")
def _batch_gather(ctx: KernelCtx) -> KernelFn:
    params, ids_shape = ctx.in_descs[0].shape, ctx.in_descs[1].shape
    b, n, inner = batch_dims(ids_shape, params)

    def kernel(ins, outs):
        ids = ins[1].reshape(b, -1)
        check_indices(ids, n, "index", len(ids_shape) - 1, "in", params)
        picked = np.take_along_axis(ins[0].reshape(b, n, inner), ids[:, :, None].astype(np.int64), axis=1)
        outs[0][...] = picked.reshape(outs[0].shape)

    return kernel


@register_kernel("unsorted_batch_segment_sum", "reference")
def _batch_segment_sum(ctx: KernelCtx) -> KernelFn:
    ids_shape, out_shape = ctx.in_descs[1].shape, ctx.out_descs[0].shape
    b, n, inner = batch_dims(ids_shape, out_shape)

    def kernel(ins, outs):
        ids = ins[1].reshape(b, -1)
        check_indices(ids, n, "segment id", len(ids_shape) - 1, "out", out_shape)
        data = ins[0].reshape(b, ids.shape[1], inner)
        out = outs[0].reshape(b, n, inner)
        out[...] = 0
        for i in range(b):
            np.add.at(out[i], ids[i], data[i])

    return kernel


@register_kernel("add_n", "reference")
def _add_n(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        total = ins[0] + ins[1]  # in the inputs' dtype, left to right, as OneFlow's kernel adds them
        for x in ins[2:]:
            total = total + x
        outs[0][...] = total

    return kernel


@register_kernel("tuple_identity", "reference")
def _tuple_identity(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        for x, y in zip(ins, outs):
            y[...] = x

    return kernel


def pad_window(ctx: KernelCtx, small: tuple[int, ...]) -> tuple[slice, ...]:
    """Where the unpadded blob (of shape ``small``) lies inside the padded one."""
    return tuple(slice(b, b + d) for b, d in zip(ctx.attrs["padding_before"], small))


def pad_value(ctx: KernelCtx, dtype: np.dtype) -> float | int:
    """pad_op's constant: the floating attr for a floating blob, the integral one otherwise (as pad.py sets them)."""
    return ctx.attrs["floating_constant_value" if dtype.kind == "f" else "integral_constant_value"]


@register_kernel("pad", "reference")
def _pad(ctx: KernelCtx) -> KernelFn:
    window = pad_window(ctx, ctx.in_descs[0].shape)
    value = pad_value(ctx, ctx.in_descs[0].dtype.np)

    def kernel(ins, outs):
        outs[0].fill(value)
        outs[0][window] = ins[0]

    return kernel


@register_kernel("pad_grad", "reference")
def _pad_grad(ctx: KernelCtx) -> KernelFn:
    window = pad_window(ctx, ctx.out_descs[0].shape)

    def kernel(ins, outs):
        outs[0][...] = ins[0][window]

    return kernel
