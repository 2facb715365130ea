"""Numba CPU kernels of the sorting ops (see kernels/reference/sort.py for what each computes): each row of the
last axis sorted with Numba's merge sort (stable: equal values in index order, as OneFlow's comparator)."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _row_order(row, descending, order):
    # order[:] = the stable order of row; descending sorts the reversed row so that ties keep index order
    n = row.size
    if descending:
        idx = np.argsort(row[::-1], kind="mergesort")
        for j in range(n):
            order[j] = n - 1 - idx[n - 1 - j]
    else:
        idx = np.argsort(row, kind="mergesort")
        for j in range(n):
            order[j] = idx[j]


@njit
def _arg_sort(x, descending, out):
    # x (rows, n), out (rows, n) int32
    order = np.empty(x.shape[1], np.int64)
    for r in range(x.shape[0]):
        _row_order(x[r], descending, order)
        for j in range(x.shape[1]):
            out[r, j] = order[j]


@njit
def _sort(x, descending, out):
    order = np.empty(x.shape[1], np.int64)
    for r in range(x.shape[0]):
        _row_order(x[r], descending, order)
        for j in range(x.shape[1]):
            out[r, j] = x[r, order[j]]


@njit
def _top_k(x, out):
    # out (rows, k): the first k of the descending order
    order = np.empty(x.shape[1], np.int64)
    for r in range(x.shape[0]):
        _row_order(x[r], True, order)
        for j in range(out.shape[1]):
            out[r, j] = order[j]


@njit
def _in_top_k(targets, predictions, k, out):
    classes = predictions.shape[1]
    for i in range(targets.size):
        t = targets[i]
        ok = 0 <= t < classes
        more = 0
        if ok:
            target = predictions[i, t]
            for c in range(classes):
                p = predictions[i, c]
                if not np.isfinite(p):
                    ok = False
                    break
                if p > target:
                    more += 1
        out[i] = 1 if ok and more < k else 0


def _rows(ctx: KernelCtx) -> tuple[int, int]:
    shape = ctx.in_descs[0].shape
    n = shape[-1]
    return int(np.prod(shape[:-1], dtype=np.int64)), n


@register_kernel("arg_sort", "numba")
def _arg_sort_f(ctx: KernelCtx) -> KernelFn:
    rows, n = _rows(ctx)
    descending = ctx.attrs["direction"] == "DESCENDING"

    def kernel(ins, outs):
        _arg_sort(ins[0].reshape(rows, n), descending, outs[0].reshape(rows, n))

    return kernel


@register_kernel("sort", "numba")
def _sort_f(ctx: KernelCtx) -> KernelFn:
    rows, n = _rows(ctx)
    descending = ctx.attrs["direction"] == "DESCENDING"

    def kernel(ins, outs):
        _sort(ins[0].reshape(rows, n), descending, outs[0].reshape(rows, n))

    return kernel


@register_kernel("top_k", "numba")
def _top_k_f(ctx: KernelCtx) -> KernelFn:
    rows, n = _rows(ctx)
    k = ctx.out_descs[0].shape[-1]

    def kernel(ins, outs):
        _top_k(ins[0].reshape(rows, n), outs[0].reshape(rows, k))

    return kernel


@register_kernel("in_top_k", "numba")
def _in_top_k_f(ctx: KernelCtx) -> KernelFn:
    k = ctx.attrs["k"]

    def kernel(ins, outs):
        _in_top_k(ins[0], ins[1], k, outs[0])

    return kernel
