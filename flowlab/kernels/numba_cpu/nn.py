"""Numba CPU kernels: matmul (BLAS through np.dot), bias_add, softmax, sparse softmax cross entropy."""

from __future__ import annotations

import math as _m

import numpy as np

from ..checks import check_labels
from ..registry import FusedCall, KernelCtx, KernelFn, fusable, register_kernel
from ._numba import njit


@njit
def _dot(a, b, out):
    np.dot(a, b, out)


@njit
def _batched_dot(a, b, out):
    for i in range(out.shape[0]):
        out[i] = np.dot(a[i], b[i])


@register_kernel("matmul", "numba")
def _matmul(ctx: KernelCtx) -> KernelFn:
    ta, tb, alpha = ctx.attrs["transpose_a"], ctx.attrs["transpose_b"], ctx.attrs["alpha"]
    batched = len(ctx.out_descs[0].shape) > 2

    def kernel(ins, outs):
        a, b, out = ins[0], ins[1], outs[0]
        if batched:  # fold the batch axes into one
            a = a.reshape(-1, *a.shape[-2:])
            b = b.reshape(-1, *b.shape[-2:])
            a = a.transpose(0, 2, 1) if ta else a
            b = b.transpose(0, 2, 1) if tb else b
            _batched_dot(np.ascontiguousarray(a), np.ascontiguousarray(b), out.reshape(-1, *out.shape[-2:]))
        else:
            _dot(a.T if ta else a, b.T if tb else b, out)  # a transpose is a free F-order view for BLAS
        if alpha != 1.0:
            out *= alpha

    if batched or alpha != 1.0:
        return kernel
    return fusable(kernel, lambda ins, outs: FusedCall(_dot, (ins[0].T if ta else ins[0], ins[1].T if tb else ins[1],
                                                              outs[0])))


@njit
def _bias_add(a, b, out):
    # a, out: (outer, channels, inner); b: (channels,)
    for i in range(a.shape[0]):
        for c in range(a.shape[1]):
            bc = b[c]
            for k in range(a.shape[2]):
                out[i, c, k] = a[i, c, k] + bc


@njit
def _bias_add_rows(a, b, out):
    # a, out: (outer, channels), the bias on the last axis (dense's N x C): the inner loop vectorizes
    for i in range(a.shape[0]):
        for c in range(a.shape[1]):
            out[i, c] = a[i, c] + b[c]


@register_kernel("bias_add", "numba")
def _bias_add_factory(ctx: KernelCtx) -> KernelFn:
    shape = ctx.in_descs[0].shape
    axis = ctx.attrs["axis"] % len(shape)
    as3 = (int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:])))
    if as3[2] == 1:  # an inner loop of length 1 would not vectorize (12x slower at 100 x 512)
        as2 = as3[:2]

        def rows(ins, outs):
            _bias_add_rows(ins[0].reshape(as2), ins[1], outs[0].reshape(as2))

        return fusable(rows, lambda ins, outs: FusedCall(_bias_add_rows, (ins[0].reshape(as2), ins[1],
                                                                          outs[0].reshape(as2))))

    def kernel(ins, outs):
        _bias_add(ins[0].reshape(as3), ins[1], outs[0].reshape(as3))

    return fusable(kernel, lambda ins, outs: FusedCall(_bias_add, (ins[0].reshape(as3), ins[1], outs[0].reshape(as3))))


@njit
def row_max(x, r):
    m = x[r, 0]
    for c in range(1, x.shape[1]):
        v = x[r, c]
        if v > m or v != v:  # a NaN anywhere makes the row NaN, as in NumPy
            m = v
    return m


@njit
def softmax_row(x, y, r):
    """Row r of softmax(x) into y; returns (max, sum of exp(x - max)) for a log-sum-exp."""
    m = row_max(x, r)
    s = 0.0
    for c in range(x.shape[1]):
        e = _m.exp(x[r, c] - m)
        y[r, c] = e
        s += e
    for c in range(x.shape[1]):
        y[r, c] /= s
    return m, s


@njit
def _softmax_rows(x, y):
    for r in range(x.shape[0]):
        softmax_row(x, y, r)


@njit
def _softmax_grad_rows(y, dy, dx):
    for r in range(y.shape[0]):
        dot = 0.0
        for c in range(y.shape[1]):
            dot += dy[r, c] * y[r, c]
        for c in range(y.shape[1]):
            dx[r, c] = y[r, c] * (dy[r, c] - dot)


@njit
def first_out_of_range(ids, n):
    """The position of the first of the (1-D) ``ids`` outside [0, n), or -1: Numba does not bounds-check, so
    every kernel that indexes with data calls this before it reads or writes."""
    for r in range(ids.shape[0]):
        if ids[r] < 0 or ids[r] >= n:
            return r
    return -1


@njit
def _xent_rows(x, labels, prob, out):
    for r in range(x.shape[0]):
        m, s = softmax_row(x, prob, r)
        # -log_softmax: finite for finite logits (-log(prob) is inf once prob underflows)
        out[r] = -((x[r, labels[r]] - m) - _m.log(s))


@njit
def _xent_grad_rows(prob, labels, dy, dx):
    for r in range(prob.shape[0]):
        for c in range(prob.shape[1]):
            dx[r, c] = prob[r, c] * dy[r]
        dx[r, labels[r]] = (prob[r, labels[r]] - 1) * dy[r]  # not p dy - dy: inf - inf for an inf dy


@njit
def _xent_checked(x, labels, prob, out):
    bad = first_out_of_range(labels, x.shape[1])
    if bad < 0:
        _xent_rows(x, labels, prob, out)
    return bad


@njit
def _xent_grad_checked(prob, labels, dy, dx):
    bad = first_out_of_range(labels, prob.shape[1])
    if bad < 0:
        _xent_grad_rows(prob, labels, dy, dx)
    return bad


def _rows(desc) -> tuple[int, int]:
    return int(np.prod(desc.shape[:-1])), desc.shape[-1]


@register_kernel("softmax", "numba")
def _softmax(ctx: KernelCtx) -> KernelFn:
    rows = _rows(ctx.in_descs[0])

    def kernel(ins, outs):
        _softmax_rows(ins[0].reshape(rows), outs[0].reshape(rows))

    return kernel


@register_kernel("softmax_grad", "numba")
def _softmax_grad(ctx: KernelCtx) -> KernelFn:
    rows = _rows(ctx.in_descs[0])

    def kernel(ins, outs):
        _softmax_grad_rows(ins[0].reshape(rows), ins[1].reshape(rows), outs[0].reshape(rows))

    return kernel


@register_kernel("sparse_softmax_cross_entropy", "numba")
def _xent(ctx: KernelCtx) -> KernelFn:
    rows = _rows(ctx.in_descs[0])

    def kernel(ins, outs):
        labels = ins[1].reshape(-1)
        check_labels(labels, rows[1], first_out_of_range(labels, rows[1]))
        _xent_rows(ins[0].reshape(rows), labels, outs[0].reshape(rows), outs[1].reshape(-1))

    return fusable(kernel, lambda ins, outs: FusedCall(
        _xent_checked, (ins[0].reshape(rows), ins[1].reshape(-1), outs[0].reshape(rows), outs[1].reshape(-1)), True))


@register_kernel("sparse_softmax_cross_entropy_grad", "numba")
def _xent_grad(ctx: KernelCtx) -> KernelFn:
    rows = _rows(ctx.in_descs[0])

    def kernel(ins, outs):
        labels = ins[1].reshape(-1)
        check_labels(labels, rows[1], first_out_of_range(labels, rows[1]))
        _xent_grad_rows(ins[0].reshape(rows), labels, ins[2].reshape(-1), outs[0].reshape(rows))

    return fusable(kernel, lambda ins, outs: FusedCall(
        _xent_grad_checked, (ins[0].reshape(rows), ins[1].reshape(-1), ins[2].reshape(-1), outs[0].reshape(rows)),
        True))
