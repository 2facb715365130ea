"""Numba CPU kernels of the ops OneFlow's model zoo needs: one_hot, batch_gather, unsorted_batch_segment_sum,
add_n, tuple_identity and the N-d constant pad (see kernels/reference/zoo.py for what each computes)."""

from __future__ import annotations

from ..checks import raise_out_of_range
from ..reference.zoo import batch_dims, one_hot_values, pad_value, pad_window
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit
from .array import _copy_nd, _fill, copy_flat
from .nn import first_out_of_range


@njit
def _one_hot(ids, out, on, off):
    # ids (m,), out (m, depth); every index checked before anything is written
    bad = first_out_of_range(ids, out.shape[1])
    if bad < 0:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = off
            out[i, ids[i]] = on
    return bad


@register_kernel("one_hot", "numba")
def _one_hot_f(ctx: KernelCtx) -> KernelFn:
    out_shape, depth = ctx.out_descs[0].shape, ctx.attrs["depth"]
    on, off = (ctx.out_descs[0].dtype.np.type(v) for v in one_hot_values(ctx))

    def kernel(ins, outs):
        bad = _one_hot(ins[0].reshape(-1), outs[0].reshape(-1, depth), on, off)
        raise_out_of_range(ins[0], bad, depth, "index", len(out_shape) - 1, "out", out_shape)

    return kernel


@njit
def _batch_gather(params, ids, out):
    # params (b, n, inner), ids (b, k), out (b, k, inner)
    bad = first_out_of_range(ids.ravel(), params.shape[1])
    if bad < 0:
        for b in range(ids.shape[0]):
            for j in range(ids.shape[1]):
                row = ids[b, j]
                for i in range(params.shape[2]):
                    out[b, j, i] = params[b, row, i]
    return bad


@njit
def _batch_segment_sum(data, ids, out):
    # data (b, k, inner), ids (b, k), out (b, n, inner)
    bad = first_out_of_range(ids.ravel(), out.shape[1])
    if bad < 0:
        out[...] = 0
        for b in range(ids.shape[0]):
            for j in range(ids.shape[1]):
                row = ids[b, j]
                for i in range(data.shape[2]):
                    out[b, row, i] += data[b, j, i]
    return bad


@register_kernel("batch_gather", "numba")
def _batch_gather_f(ctx: KernelCtx) -> KernelFn:
    params, ids_shape = ctx.in_descs[0].shape, ctx.in_descs[1].shape
    b, n, inner = batch_dims(ids_shape, params)
    k = ids_shape[-1]

    def kernel(ins, outs):
        bad = _batch_gather(ins[0].reshape(b, n, inner), ins[1].reshape(b, k), outs[0].reshape(b, k, inner))
        raise_out_of_range(ins[1], bad, n, "index", len(ids_shape) - 1, "in", params)

    return kernel


@register_kernel("unsorted_batch_segment_sum", "numba")
def _batch_segment_sum_f(ctx: KernelCtx) -> KernelFn:
    ids_shape, out_shape = ctx.in_descs[1].shape, ctx.out_descs[0].shape
    b, n, inner = batch_dims(ids_shape, out_shape)
    k = ids_shape[-1]

    def kernel(ins, outs):
        bad = _batch_segment_sum(ins[0].reshape(b, k, inner), ins[1].reshape(b, k), outs[0].reshape(b, n, inner))
        raise_out_of_range(ins[1], bad, n, "segment id", len(ids_shape) - 1, "out", out_shape)

    return kernel


@njit
def _add2(a, b, out):
    a, b, out = a.ravel(), b.ravel(), out.ravel()
    for i in range(out.size):
        out[i] = a[i] + b[i]


@register_kernel("add_n", "numba")
def _add_n_f(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        _add2(ins[0], ins[1], outs[0])
        for x in ins[2:]:  # left to right, as the reference (out aliases one operand: elementwise, so safe)
            _add2(outs[0], x, outs[0])

    return kernel


@register_kernel("tuple_identity", "numba")
def _tuple_identity_f(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        for x, y in zip(ins, outs):
            copy_flat(x, y)

    return kernel


@register_kernel("pad", "numba")
def _pad_f(ctx: KernelCtx) -> KernelFn:
    window = pad_window(ctx, ctx.in_descs[0].shape)
    value = ctx.out_descs[0].dtype.np.type(pad_value(ctx, ctx.in_descs[0].dtype.np))

    def kernel(ins, outs):
        _fill(outs[0], value)
        _copy_nd(ins[0], outs[0][window])

    return kernel


@register_kernel("pad_grad", "numba")
def _pad_grad_f(ctx: KernelCtx) -> KernelFn:
    window = pad_window(ctx, ctx.out_descs[0].shape)
    return lambda ins, outs: _copy_nd(ins[0][window], outs[0])
