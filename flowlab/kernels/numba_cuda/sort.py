"""CUDA kernels of the sorting ops (see kernels/reference/sort.py for what each computes). One thread per element
finds the element's rank in its row by counting the elements that sort before it, O(n) per element: the rows
these ops see (class scores, small sort axes) are short, and the rank is stable by construction (equal values in
index order). NaN sorts as the largest value, as NumPy's and Numba's sorts put it."""

from __future__ import annotations

import math

from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, flat, launch1


@cuda.jit(device=True)
def _less(a, b):
    # a total order with NaN largest (a NaN is never less; anything else is less than a NaN)
    if a != a:
        return False
    return b != b or a < b


@cuda.jit(device=True)
def _rank(x, row, n, j, descending):
    base = row * n
    v = x[base + j]
    rank = 0
    for c in range(n):
        w = x[base + c]
        before = _less(v, w) if descending else _less(w, v)
        if not before and c < j and not _less(v, w) and not _less(w, v):
            before = True  # equal values keep index order, in both directions
        if before:
            rank += 1
    return rank


@cuda.jit
def _arg_sort(x, out, n, descending):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, x.size, step):
        row, j = i // n, i % n
        out[row * n + _rank(x, row, n, j, descending)] = j


@cuda.jit
def _sort(x, out, n, descending):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, x.size, step):
        row, j = i // n, i % n
        out[row * n + _rank(x, row, n, j, descending)] = x[i]


@cuda.jit
def _top_k(x, out, n, k):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, x.size, step):
        row, j = i // n, i % n
        r = _rank(x, row, n, j, True)
        if r < k:
            out[row * k + r] = j


@cuda.jit
def _in_top_k(targets, predictions, out, classes, k):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, targets.size, step):
        t = targets[i]
        ok = 0 <= t < classes
        more = 0
        if ok:
            target = predictions[i * classes + t]
            for c in range(classes):
                p = predictions[i * classes + c]
                if not math.isfinite(p):
                    ok = False
                    break
                if p > target:
                    more += 1
        out[i] = 1 if ok and more < k else 0


def _direction(ctx: KernelCtx) -> bool:
    return ctx.attrs["direction"] == "DESCENDING"


@register_kernel("arg_sort", "numba", "gpu")
def _arg_sort_factory(ctx: KernelCtx):
    n, descending, threads = ctx.in_descs[0].shape[-1], _direction(ctx), current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_arg_sort, ins[0].size, threads, stream, flat(ins[0]), flat(outs[0]), n, descending)

    return run


@register_kernel("sort", "numba", "gpu")
def _sort_factory(ctx: KernelCtx):
    n, descending, threads = ctx.in_descs[0].shape[-1], _direction(ctx), current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_sort, ins[0].size, threads, stream, flat(ins[0]), flat(outs[0]), n, descending)

    return run


@register_kernel("top_k", "numba", "gpu")
def _top_k_factory(ctx: KernelCtx):
    n, k, threads = ctx.in_descs[0].shape[-1], ctx.out_descs[0].shape[-1], current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_top_k, ins[0].size, threads, stream, flat(ins[0]), flat(outs[0]), n, k)

    return run


@register_kernel("in_top_k", "numba", "gpu")
def _in_top_k_factory(ctx: KernelCtx):
    classes, k, threads = ctx.in_descs[1].shape[-1], ctx.attrs["k"], current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_in_top_k, ins[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(outs[0]), classes, k)

    return run
