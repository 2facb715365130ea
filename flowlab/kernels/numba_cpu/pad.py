"""Numba CPU kernels for the padding ops."""

from __future__ import annotations

from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _reflect_index(i: int, n: int) -> int:
    # Reflection without repeating the border: -1 -> 1, n -> n - 2.
    if i < 0:
        return -i
    if i >= n:
        return 2 * (n - 1) - i
    return i


@njit
def reflection_pad2d(x, y, left, top):
    n, c, h, w = x.shape
    oh, ow = y.shape[2], y.shape[3]
    for a in range(n):
        for b in range(c):
            for i in range(oh):
                si = _reflect_index(i - top, h)
                for j in range(ow):
                    y[a, b, i, j] = x[a, b, si, _reflect_index(j - left, w)]


@njit
def zero_pad2d(x, y, left, top):
    n, c, h, w = x.shape
    y[...] = 0
    for a in range(n):
        for b in range(c):
            for i in range(h):
                for j in range(w):
                    y[a, b, i + top, j + left] = x[a, b, i, j]


def _factory(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        left, _right, top, _bottom = ctx.attrs["padding"]

        def kernel(ins, outs):
            fn(ins[0], outs[0], left, top)

        return kernel

    return factory


register_kernel("reflection_pad2d", "numba")(_factory(reflection_pad2d))
register_kernel("zero_pad2d", "numba")(_factory(zero_pad2d))


@njit
def reflection_pad2d_grad(dy, dx, left, top):
    n, c, h, w = dx.shape
    dx[...] = 0
    for a in range(n):
        for b in range(c):
            for i in range(dy.shape[2]):
                si = _reflect_index(i - top, h)
                for j in range(dy.shape[3]):
                    dx[a, b, si, _reflect_index(j - left, w)] += dy[a, b, i, j]


@njit
def zero_pad2d_grad(dy, dx, left, top):
    n, c, h, w = dx.shape
    for a in range(n):
        for b in range(c):
            for i in range(h):
                for j in range(w):
                    dx[a, b, i, j] = dy[a, b, i + top, j + left]


register_kernel("reflection_pad2d_grad", "numba")(_factory(reflection_pad2d_grad))
register_kernel("zero_pad2d_grad", "numba")(_factory(zero_pad2d_grad))
