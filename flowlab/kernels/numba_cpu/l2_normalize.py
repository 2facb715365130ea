"""Numba CPU kernels of ops/l2_normalize_ops.py; kernels/reference/l2_normalize.py says what they compute. Blobs are
viewed as (outer, axis, inner)."""

from __future__ import annotations

import math

import numpy as np

from ..reference.l2_normalize import epsilon_of
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _l2(x, y, s, eps, zero):
    for o in range(x.shape[0]):
        for i in range(x.shape[2]):
            acc = zero  # not x * 0: an inf x would make it NaN
            for j in range(x.shape[1]):
                acc += x[o, j, i] * x[o, j, i]
            s[o, 0, i] = acc
            norm = math.sqrt(max(acc, eps))
            for j in range(x.shape[1]):
                y[o, j, i] = x[o, j, i] / norm


@njit
def _l2_grad(dy, y, s, dx, eps, zero):
    for o in range(dy.shape[0]):
        for i in range(dy.shape[2]):
            norm = math.sqrt(max(s[o, 0, i], eps))
            if s[o, 0, i] >= eps:
                inner = zero
                for j in range(dy.shape[1]):
                    inner += dy[o, j, i] * y[o, j, i]
                for j in range(dy.shape[1]):
                    dx[o, j, i] = (dy[o, j, i] - inner * y[o, j, i]) / norm
            else:
                for j in range(dy.shape[1]):
                    dx[o, j, i] = dy[o, j, i] / norm


def view3(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    return int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:]))


@register_kernel("l2_normalize", "numba")
def _l2_f(ctx: KernelCtx) -> KernelFn:
    v, eps = view3(ctx.in_descs[0].shape, ctx.attrs["axis"] % len(ctx.in_descs[0].shape)), epsilon_of(ctx)
    s3 = (v[0], 1, v[2])
    return lambda ins, outs: _l2(ins[0].reshape(v), outs[0].reshape(v), outs[1].reshape(s3), eps,
                                   eps * 0)


@register_kernel("l2_normalize_grad", "numba")
def _l2_grad_f(ctx: KernelCtx) -> KernelFn:
    v, eps = view3(ctx.in_descs[0].shape, ctx.attrs["axis"] % len(ctx.in_descs[0].shape)), epsilon_of(ctx)
    s3 = (v[0], 1, v[2])
    return lambda ins, outs: _l2_grad(ins[0].reshape(v), ins[1].reshape(v), ins[2].reshape(s3), outs[0].reshape(v),
                                      eps, eps * 0)
