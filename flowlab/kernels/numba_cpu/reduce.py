"""Numba CPU kernels: reductions and argmax over (kept, reduced) 2-D views; broadcast_like and the
reduce_max gradient. The reduced axes are moved last once per register (a copy only when they are not).
reduce_min/prod/all/any and count_not_finite use the same 2-D views: one row loop, the reduction picked by a small
integer (``KINDS``)."""

from __future__ import annotations

import numpy as np

from ..reference.reduce import broadcast_to_like, reduce_axes
from ..registry import FusedCall, KernelCtx, KernelFn, Owned, fusable, register_kernel
from ._numba import njit


@njit
def _sum_rows(x, out):
    # integers: in their own arithmetic, wrapping into out's dtype as NumPy's sums do
    for r in range(x.shape[0]):
        s = x[r, 0]
        for c in range(1, x.shape[1]):
            s += x[r, c]
        out[r] = s


@njit
def _sum_rows_float(x, out):
    # floats: eight float64 lanes (independent add chains, so the loop runs at the adders' throughput, not their
    # latency), combined pairwise, then the tail. A sequential float32 sum of 2^20 values was 3e-5 off; this one is
    # the float64 sum rounded once (OneFlow's test_reduce_sum expects 1e-5; the CUDA kernels accumulate in float64 too)
    n = x.shape[1]
    end = n - n % 8
    for r in range(x.shape[0]):
        row = x[r]
        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
        for i in range(0, end, 8):
            s0 += row[i]
            s1 += row[i + 1]
            s2 += row[i + 2]
            s3 += row[i + 3]
            s4 += row[i + 4]
            s5 += row[i + 5]
            s6 += row[i + 6]
            s7 += row[i + 7]
        s = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
        for i in range(end, n):
            s += row[i]
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
def _sum_leading(x, out, acc):
    # x (reduced, kept): add rows in memory order into acc, cache-friendly (a bias gradient's reduction); acc is
    # float64 for floats (accumulator_dtype), so a long run of rows loses nothing to float32 rounding
    for c in range(x.shape[1]):  # not acc[:] = x[0]: see _numba.py on slice assignment
        acc[c] = x[0, c]
    for r in range(1, x.shape[0]):
        for c in range(x.shape[1]):
            acc[c] += x[r, c]
    for c in range(x.shape[1]):
        out[c] = acc[c]


@njit
def _sum_middle(x, out, acc):
    # x (outer, kept, inner): the outer blocks added elementwise into acc (kept, inner; float64 for floats), vector
    # adds in memory order, then each row of acc summed (a bias gradient of NCHW: over N, then H*W). Row views
    # indexed from 0 let Numba drop its negative-index test, so the adds vectorize. Before: a transposed copy of x,
    # then a scalar sum per row (4.2 -> 1 ms on LeNet's 100x32x28x28 conv1 gradient).
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


def accumulator_dtype(dtype: np.dtype) -> np.dtype:
    """What a sum accumulates in: float64 for floats (long float32 runs keep their precision), the input's own
    dtype for integers (they wrap as NumPy's)."""
    return np.dtype(np.float64) if np.dtype(dtype).kind == "f" else np.dtype(dtype)


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
    if rows and int(np.prod(shape)) // rows == 1:  # one kept element: a contiguous run, summed as a row (20x faster)
        return None
    return rows, int(np.prod(shape)) // rows


def _free_rows(ctx: KernelCtx) -> tuple[int, int] | None:
    """(kept, reduced) when the input reshapes to that 2-D view without a copy (every kept axis longer than 1
    comes before every reduced one); else None."""
    shape = ctx.in_descs[0].shape
    axes = reduce_axes(ctx)
    kept = [i for i in range(len(shape)) if i not in axes]
    n_kept = int(np.prod([shape[i] for i in kept]))
    long_kept, long_reduced = [i for i in kept if shape[i] != 1], [i for i in axes if shape[i] != 1]
    if long_kept and long_reduced and max(long_kept) > min(long_reduced):
        return None
    return n_kept, int(np.prod(shape)) // max(n_kept, 1)


def _two_d(ctx: KernelCtx):
    """A function giving (kept, reduced) 2-D views of the input."""
    shape = ctx.in_descs[0].shape
    free = _free_rows(ctx)
    if free is not None:  # reduced axes are already last (size-1 axes aside): a free reshape
        return lambda x: x.reshape(free)
    axes = reduce_axes(ctx)
    kept = [i for i in range(len(shape)) if i not in axes]
    n_kept = int(np.prod([shape[i] for i in kept]))
    rows = (n_kept, int(np.prod(shape)) // max(n_kept, 1))
    perm = kept + list(axes)
    return lambda x: np.ascontiguousarray(x.transpose(perm)).reshape(rows)


def _reduce(fn, scale: bool = False):
    def factory(ctx: KernelCtx) -> KernelFn:
        acc_dtype = accumulator_dtype(ctx.in_descs[0].dtype.np)
        leading = _leading_sum(ctx)
        if leading is not None:
            lead_acc = np.empty(leading[1], acc_dtype)

            def by_rows(ins, outs):
                out = outs[0].reshape(-1)
                _sum_leading(ins[0].reshape(leading), out, lead_acc)
                if scale:
                    out /= leading[0]

            if scale:
                return by_rows
            return fusable(by_rows, lambda ins, outs: FusedCall(_sum_leading, (ins[0].reshape(leading),
                                                                                outs[0].reshape(-1), Owned(lead_acc))))
        middle = _middle_sum(ctx)
        if middle is not None:
            acc = np.empty(middle[1:], acc_dtype)

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
        rows_fn = _sum_rows_float if fn is _sum_rows and acc_dtype.kind == "f" else fn

        def kernel(ins, outs):
            x = two_d(ins[0])
            out = outs[0].reshape(-1)
            rows_fn(x, out)
            if scale:
                out /= x.shape[1]

        free = _free_rows(ctx)
        if scale or free is None:
            return kernel
        return fusable(kernel, lambda ins, outs: FusedCall(rows_fn, (ins[0].reshape(free), outs[0].reshape(-1))))

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


KINDS = ("reduce_min", "reduce_prod", "reduce_all", "reduce_any")
MIN, PROD, ALL, ANY = range(4)


@njit
def _rows(k, x, out, one):
    for r in range(x.shape[0]):
        if k == MIN:  # a NaN wins wherever it is, as np.min
            m = x[r, 0]
            for c in range(1, x.shape[1]):
                v = x[r, c]
                if v < m or v != v:
                    m = v
            out[r] = m
        elif k == PROD:
            p = one
            for c in range(x.shape[1]):
                p *= x[r, c]
            out[r] = p
        else:
            hit = k == ANY  # the answer once an element decides it: any nonzero for ANY, any zero for ALL
            found = False
            for c in range(x.shape[1]):
                if (x[r, c] != 0) == hit:
                    found = True
                    break
            out[r] = 1 if found == hit else 0


def _factory(k: int):
    def factory(ctx: KernelCtx) -> KernelFn:
        two_d = _two_d(ctx)
        dtype = ctx.in_descs[0].dtype.np
        one = np.float64(1) if dtype.kind == "f" else np.int64(1)  # float64 products; integers wrap on the store

        def kernel(ins, outs):
            _rows(k, two_d(ins[0]), outs[0].reshape(-1), one)

        return kernel

    return factory


for _k, _name in enumerate(KINDS):
    register_kernel(_name, "numba")(_factory(_k))


@njit
def _not_finite(x):
    x = x.ravel()
    n = 0
    for i in range(x.size):
        v = x[i]
        if v != v or v - v != 0:  # NaN, or ±inf (inf - inf is NaN)
            n += 1
    return n


def _count(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        total = 0
        for x in ins:
            total += _not_finite(x)
        outs[0][0] = total

    return kernel


register_kernel("count_not_finite", "numba")(_count)
register_kernel("multi_count_not_finite", "numba")(_count)
