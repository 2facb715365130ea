"""Numba CPU kernels for more_ops."""

from __future__ import annotations

import math as _m

import numpy as np

from ..checks import raise_out_of_range
from ..registry import FusedCall, KernelCtx, KernelFn, fusable, register_kernel
from ._numba import njit
from .array import _copy_nd
from .nn import first_out_of_range, softmax_row

_SQRT1_2 = 1 / _m.sqrt(2)
_INV_SQRT_2PI = 1 / _m.sqrt(2 * _m.pi)


@njit
def _gelu(x, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = 0.5 * x[i] * (1 + _m.erf(x[i] * _SQRT1_2))


@njit
def _gelu_grad(x, dy, dx):
    x, dy, dx = x.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        v = x[i]
        dx[i] = dy[i] * (0.5 * (1 + _m.erf(v * _SQRT1_2)) + v * _m.exp(-0.5 * v * v) * _INV_SQRT_2PI)


@njit
def _leaky(x, y, alpha):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = x[i] if x[i] > 0 else alpha * x[i]


@njit
def _leaky_grad(x, dy, dx, alpha):
    x, dy, dx = x.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = dy[i] if x[i] > 0 else alpha * dy[i]


@register_kernel("gelu", "numba")
def _gelu_f(ctx: KernelCtx) -> KernelFn:
    return lambda ins, outs: _gelu(ins[0], outs[0])


@register_kernel("gelu_grad", "numba")
def _gelu_grad_f(ctx: KernelCtx) -> KernelFn:
    return lambda ins, outs: _gelu_grad(ins[0], ins[1], outs[0])


@register_kernel("leaky_relu", "numba")
def _leaky_f(ctx: KernelCtx) -> KernelFn:
    alpha = ctx.in_descs[0].dtype.np.type(ctx.attrs["alpha"])
    return lambda ins, outs: _leaky(ins[0], outs[0], alpha)


@register_kernel("leaky_relu_grad", "numba")
def _leaky_grad_f(ctx: KernelCtx) -> KernelFn:
    alpha = ctx.in_descs[0].dtype.np.type(ctx.attrs["alpha"])
    return lambda ins, outs: _leaky_grad(ins[0], ins[1], outs[0], alpha)


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
    from ..reference.more import gather_rows

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
    from ..reference.more import slices

    index = slices(ctx, ctx.in_descs[0].shape)
    return lambda ins, outs: _copy_nd(ins[0][index], outs[0])


@register_kernel("slice_grad", "numba")
def _slice_grad_f(ctx: KernelCtx) -> KernelFn:
    from ..reference.more import slices

    index = slices(ctx, ctx.out_descs[0].shape)

    def kernel(ins, outs):
        outs[0].fill(0)
        _copy_nd(ins[0], outs[0][index])

    return kernel


@njit
def _softmax_xent_rows(x, labels, prob, out):
    for r in range(x.shape[0]):
        m, s = softmax_row(x, prob, r)
        log_s = _m.log(s)
        loss = 0.0
        for c in range(x.shape[1]):
            loss += labels[r, c] * ((x[r, c] - m) - log_s)  # log_softmax, as kernels/reference/nn.py
        out[r] = -loss


@njit
def _softmax_xent_grad_rows(prob, labels, dy, dx):
    # OneFlow's ComputeDiffWithSoftmax: dy * (p - l), whatever the labels sum to (kernels/reference/more.py)
    for r in range(prob.shape[0]):
        for c in range(prob.shape[1]):
            dx[r, c] = (prob[r, c] - labels[r, c]) * dy[r]


@njit
def _sigmoid_xent(x, z, out):
    x, z, out = x.ravel(), z.ravel(), out.ravel()
    for i in range(out.size):
        out[i] = max(x[i], 0.0) - x[i] * z[i] + _m.log1p(_m.exp(-abs(x[i])))


@njit
def _sigmoid_xent_grad(x, z, dy, dx):
    x, z, dy, dx = x.ravel(), z.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = (1.0 / (1.0 + _m.exp(-x[i])) - z[i]) * dy[i]


@register_kernel("softmax_cross_entropy", "numba")
def _softmax_xent_f(ctx: KernelCtx) -> KernelFn:
    c = ctx.in_descs[0].shape[-1]
    return lambda ins, outs: _softmax_xent_rows(ins[0].reshape(-1, c), ins[1].reshape(-1, c),
                                                outs[0].reshape(-1, c), outs[1].reshape(-1))


@register_kernel("softmax_cross_entropy_grad", "numba")
def _softmax_xent_grad_f(ctx: KernelCtx) -> KernelFn:
    c = ctx.in_descs[0].shape[-1]
    return lambda ins, outs: _softmax_xent_grad_rows(ins[0].reshape(-1, c), ins[1].reshape(-1, c),
                                                     ins[2].reshape(-1), outs[0].reshape(-1, c))


@register_kernel("sigmoid_cross_entropy", "numba")
def _sigmoid_xent_f(ctx: KernelCtx) -> KernelFn:
    return lambda ins, outs: _sigmoid_xent(ins[0], ins[1], outs[0])


@register_kernel("sigmoid_cross_entropy_grad", "numba")
def _sigmoid_xent_grad_f(ctx: KernelCtx) -> KernelFn:
    return lambda ins, outs: _sigmoid_xent_grad(ins[0], ins[1], ins[2], outs[0])
