"""Numba CPU kernels of the sorting ops (see kernels/reference/sort.py for what each computes): each row of the
last axis sorted with Numba's merge sort (stable: equal values in index order, as OneFlow's comparator), on the
reference's key (descending: -x), so NaN lands where the reference puts it."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


def _key(x: np.ndarray, descending: bool) -> np.ndarray:
    """The ascending sort key, as the reference's: a descending sort orders by -x (~x for integers, which cannot
    overflow), so ties keep index order and NaN sorts last either way, as NumPy's stable sort puts it."""
    if not descending:
        return x
    return ~x if x.dtype.kind in "iu" else -x


@njit
def _row_order(key, order):
    # order[:] = the stable ascending order of key (Numba's merge sort: NaN last, as NumPy's)
    idx = np.argsort(key, kind="mergesort")
    for j in range(key.size):
        order[j] = idx[j]


@njit
def _arg_sort(key, out):
    # key (rows, n), out (rows, n) int32
    order = np.empty(key.shape[1], np.int64)
    for r in range(key.shape[0]):
        _row_order(key[r], order)
        for j in range(key.shape[1]):
            out[r, j] = order[j]


@njit
def _sort(x, key, out):
    order = np.empty(x.shape[1], np.int64)
    for r in range(x.shape[0]):
        _row_order(key[r], order)
        for j in range(x.shape[1]):
            out[r, j] = x[r, order[j]]


@njit
def _top_k(key, out):
    # out (rows, k): the first k of the descending order (key is the descending key)
    order = np.empty(key.shape[1], np.int64)
    for r in range(key.shape[0]):
        _row_order(key[r], order)
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
        _arg_sort(_key(ins[0], descending).reshape(rows, n), outs[0].reshape(rows, n))

    return kernel


@register_kernel("sort", "numba")
def _sort_f(ctx: KernelCtx) -> KernelFn:
    rows, n = _rows(ctx)
    descending = ctx.attrs["direction"] == "DESCENDING"

    def kernel(ins, outs):
        _sort(ins[0].reshape(rows, n), _key(ins[0], descending).reshape(rows, n), outs[0].reshape(rows, n))

    return kernel


@register_kernel("top_k", "numba")
def _top_k_f(ctx: KernelCtx) -> KernelFn:
    rows, n = _rows(ctx)
    k = ctx.out_descs[0].shape[-1]

    def kernel(ins, outs):
        _top_k(_key(ins[0], True).reshape(rows, n), outs[0].reshape(rows, k))

    return kernel


@register_kernel("in_top_k", "numba")
def _in_top_k_f(ctx: KernelCtx) -> KernelFn:
    k = ctx.attrs["k"]

    def kernel(ins, outs):
        _in_top_k(ins[0], ins[1], k, outs[0])

    return kernel
