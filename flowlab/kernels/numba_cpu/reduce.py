"""Numba CPU kernels: reductions and argmax over (kept, reduced) 2-D views; broadcast_like and the
reduce_max gradient. The reduced axes are moved last once per register (a copy only when they are not)."""

from __future__ import annotations

import numpy as np

from ..reference.reduce import broadcast_to_like, reduce_axes
from ..registry import FusedCall, KernelCtx, KernelFn, Owned, fusable, register_kernel
from ._numba import njit


@njit
def _sum_rows(x, out):
    for r in range(x.shape[0]):
        s = x[r, 0]  # not x - x, a zero of x's type that is NaN for an inf
        for c in range(1, x.shape[1]):
            s += x[r, c]
        out[r] = s


@njit
def _max_rows(x, out):
    # NaN wins wherever it is, as np.max: once m is NaN no comparison replaces it
    for r in range(x.shape[0]):
        m = x[r, 0]
        for c in range(1, x.shape[1]):
            v = x[r, c]
            if v > m or v != v:
                m = v
        out[r] = m


@njit
def _argmax_rows(x, out):
    # the first maximum, or the first NaN (np.argmax)
    for r in range(x.shape[0]):
        best = 0
        if x[r, 0] == x[r, 0]:
            for c in range(1, x.shape[1]):
                v = x[r, c]
                if v != v:
                    best = c
                    break
                if v > x[r, best]:
                    best = c
        out[r] = best


@njit
def _sum_leading(x, out):
    # x (reduced, kept): add rows in memory order, cache-friendly (a bias gradient's reduction)
    for c in range(x.shape[1]):  # not out[:] = x[0]: see _numba.py on slice assignment
        out[c] = x[0, c]
    for r in range(1, x.shape[0]):
        for c in range(x.shape[1]):
            out[c] += x[r, c]


@njit
def _sum_middle(x, out, acc):
    # x (outer, kept, inner): the outer blocks added elementwise into acc (kept, inner), vector adds in memory
    # order, then each row of acc summed (a bias gradient of NCHW: over N, then H*W). Row views indexed from 0
    # let Numba drop its negative-index test, so the adds vectorize. Before: a transposed copy of x, then a
    # scalar sum per row (4.2 -> 1 ms on LeNet's 100x32x28x28 conv1 gradient).
    if x.shape[0] == 0 or x.shape[2] == 0:
        for k in range(x.shape[1]):
            out[k] = 0
        return
    for k in range(x.shape[1]):
        xr, ar = x[0, k], acc[k]
        for i in range(x.shape[2]):
            ar[i] = xr[i]
    for o in range(1, x.shape[0]):
        for k in range(x.shape[1]):
            xr, ar = x[o, k], acc[k]
            for i in range(x.shape[2]):
                ar[i] += xr[i]
    for k in range(x.shape[1]):
        ar = acc[k]
        s = ar[0]
        for i in range(1, x.shape[2]):
            s += ar[i]
        out[k] = s


def _middle_sum(ctx: KernelCtx):
    """(outer, kept, inner) when a sum reduces a leading and a trailing block of axes around kept ones; else None."""
    shape = ctx.in_descs[0].shape
    axes = sorted(reduce_axes(ctx))
    kept = [i for i in range(len(shape)) if i not in axes]
    if ctx.op.op_type == "reduce_max" or not kept or kept != list(range(kept[0], kept[-1] + 1)):
        return None
    if kept[0] == 0 or kept[-1] == len(shape) - 1:  # the leading-sum and free-reshape cases
        return None
    size = lambda dims: int(np.prod([shape[i] for i in dims]))
    return size(range(kept[0])), size(kept), size(range(kept[-1] + 1, len(shape)))


def _leading_sum(ctx: KernelCtx):
    """A sum over leading axes only, as a (reduced, kept) view; None for other reductions."""
    shape = ctx.in_descs[0].shape
    axes = reduce_axes(ctx)
    if ctx.op.op_type == "reduce_max" or not axes or list(axes) != list(range(len(axes))) or len(axes) == len(shape):
        return None
    rows = int(np.prod(shape[:len(axes)]))
    return rows, int(np.prod(shape)) // rows


def _two_d(ctx: KernelCtx):
    """A function giving (kept, reduced) 2-D views of the input."""
    shape = ctx.in_descs[0].shape
    axes = reduce_axes(ctx)
    kept = [i for i in range(len(shape)) if i not in axes]
    n_kept = int(np.prod([shape[i] for i in kept]))
    rows = (n_kept, int(np.prod(shape)) // max(n_kept, 1))
    if kept == list(range(len(kept))):  # reduced axes are already last: a free reshape
        return lambda x: x.reshape(rows)
    perm = kept + list(axes)
    return lambda x: np.ascontiguousarray(x.transpose(perm)).reshape(rows)


def _reduce(fn, scale: bool = False):
    def factory(ctx: KernelCtx) -> KernelFn:
        leading = _leading_sum(ctx)
        if leading is not None:
            def by_rows(ins, outs):
                out = outs[0].reshape(-1)
                _sum_leading(ins[0].reshape(leading), out)
                if scale:
                    out /= leading[0]

            if scale:
                return by_rows
            return fusable(by_rows, lambda ins, outs: FusedCall(_sum_leading, (ins[0].reshape(leading),
                                                                                outs[0].reshape(-1))))
        middle = _middle_sum(ctx)
        if middle is not None:
            acc = np.empty(middle[1:], ctx.in_descs[0].dtype.np)

            def by_middle(ins, outs):
                out = outs[0].reshape(-1)
                _sum_middle(ins[0].reshape(middle), out, acc)
                if scale:
                    out /= middle[0] * middle[2]

            if scale:
                return by_middle
            return fusable(by_middle, lambda ins, outs: FusedCall(_sum_middle, (ins[0].reshape(middle),
                                                                                 outs[0].reshape(-1), Owned(acc))))
        two_d = _two_d(ctx)

        def kernel(ins, outs):
            x = two_d(ins[0])
            out = outs[0].reshape(-1)
            fn(x, out)
            if scale:
                out /= x.shape[1]

        return kernel

    return factory


register_kernel("reduce_sum", "numba")(_reduce(_sum_rows))
register_kernel("reduce_mean", "numba")(_reduce(_sum_rows, scale=True))
register_kernel("reduce_max", "numba")(_reduce(_max_rows))


@register_kernel("argmax", "numba")
def _argmax(ctx: KernelCtx) -> KernelFn:
    last = ctx.in_descs[0].shape[-1]

    def kernel(ins, outs):
        _argmax_rows(ins[0].reshape(-1, last), outs[0].reshape(-1))

    return kernel


@register_kernel("broadcast_like", "numba")
def _broadcast_like(ctx: KernelCtx) -> KernelFn:
    like_shape, axes = ctx.out_descs[0].shape, ctx.attrs["broadcast_axes"]

    def kernel(ins, outs):
        np.copyto(outs[0], broadcast_to_like(ins[0], like_shape, axes))  # a strided copy: numpy's fast path

    return kernel


@njit
def _max_grad_rows(x, y, dy, dx):
    # x, dx: (kept, reduced); y, dy: (kept,). Ties share the gradient; a NaN maximum matches nothing, so the
    # share is dy / 0 and the row NaN or inf times 0, as the reference's mask * (dy / ties).
    for r in range(x.shape[0]):
        ties = 0
        for c in range(x.shape[1]):
            if x[r, c] == y[r]:
                ties += 1
        share = dy[r] / ties
        for c in range(x.shape[1]):
            dx[r, c] = (1.0 if x[r, c] == y[r] else 0.0) * share


@register_kernel("reduce_max_grad", "numba")
def _reduce_max_grad(ctx: KernelCtx) -> KernelFn:
    shape = ctx.in_descs[0].shape
    axes = reduce_axes(ctx)
    kept = [i for i in range(len(shape)) if i not in axes]
    two_d = _two_d(ctx)
    rows = (int(np.prod([shape[i] for i in kept])), int(np.prod([shape[i] for i in axes])))
    perm = kept + list(axes)
    inverse = tuple(perm.index(i) for i in range(len(shape)))
    moved = tuple(shape[i] for i in perm)
    direct = perm == list(range(len(shape)))  # reduced axes last: dx is written in place
    buffer = None if direct else np.empty(rows, ctx.out_descs[0].dtype.np)

    def kernel(ins, outs):
        x, y, dy = ins
        dx = outs[0].reshape(rows) if direct else buffer
        _max_grad_rows(two_d(x), y.reshape(-1), dy.reshape(-1), dx)
        if not direct:
            outs[0][...] = buffer.reshape(moved).transpose(inverse)

    return kernel
