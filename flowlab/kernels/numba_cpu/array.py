"""Numba CPU kernels: reshape, identity, transpose, concat, split_like, cast, constant, *_like."""

from __future__ import annotations

import numpy as np

from ..registry import FusedCall, KernelCtx, KernelFn, fusable, register_kernel
from ._numba import njit


@njit
def copy_flat(x, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = x[i]


@njit
def _fill(y, value):
    y = y.ravel()
    for i in range(y.size):
        y[i] = value


@njit
def _copy_nd(x, y):
    for idx in np.ndindex(y.shape):
        y[idx] = x[idx]


@register_kernel("reshape", "numba")
@register_kernel("identity", "numba")
@register_kernel("cast", "numba")
def _copy(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        copy_flat(ins[0], outs[0])  # C order is the same in both shapes; cast converts on assignment

    return fusable(kernel, lambda ins, outs: FusedCall(copy_flat, (ins[0], outs[0])))


@register_kernel("transpose", "numba")
def _transpose(ctx: KernelCtx) -> KernelFn:
    perm = tuple(ctx.attrs["perm"])
    views: dict[int, np.ndarray] = {}

    def kernel(ins, outs):
        view = views.get(id(ins[0]))
        if view is None:
            view = views[id(ins[0])] = ins[0].transpose(perm)
        _copy_nd(view, outs[0])

    return kernel


def _axis_slices(ctx: KernelCtx, descs: tuple) -> tuple[int, list[tuple[int, int]]]:
    rank = len(descs[0].shape)
    axis = ctx.attrs["axis"] % rank
    bounds, start = [], 0
    for d in descs:
        bounds.append((start, start + d.shape[axis]))
        start += d.shape[axis]
    return axis, bounds


@register_kernel("concat", "numba")
def _concat(ctx: KernelCtx) -> KernelFn:
    axis, bounds = _axis_slices(ctx, ctx.in_descs)

    def kernel(ins, outs):
        out = outs[0]
        for x, (lo, hi) in zip(ins, bounds):
            index = (slice(None),) * axis + (slice(lo, hi),)
            _copy_nd(x, out[index])

    return kernel


@register_kernel("split_like", "numba")
def _split_like(ctx: KernelCtx) -> KernelFn:
    axis, bounds = _axis_slices(ctx, ctx.out_descs)

    def kernel(ins, outs):
        for out, (lo, hi) in zip(outs, bounds):
            _copy_nd(ins[0][(slice(None),) * axis + (slice(lo, hi),)], out)

    return kernel


def _filler(value_of):
    def factory(ctx: KernelCtx) -> KernelFn:
        value = ctx.out_descs[0].dtype.np.type(value_of(ctx))

        def kernel(ins, outs):
            _fill(outs[0], value)

        return fusable(kernel, lambda ins, outs: FusedCall(_fill, (outs[0], value)))

    return factory


register_kernel("constant", "numba")(_filler(lambda ctx: ctx.attrs["value"]))
register_kernel("zeros_like", "numba")(_filler(lambda ctx: 0))
register_kernel("ones_like", "numba")(_filler(lambda ctx: 1))
