"""Numba CPU kernels of ops/binary_ops.py (see kernels/reference/binary.py): one flat loop per arity, the op picked
by its index in BINARY; scalar_pow and the clips."""

from __future__ import annotations

import numpy as np

from ..reference.binary import clip_bounds
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit

BINARY = ("pow", "atan2", "floordiv", "xdivy", "xlogy")  # ops/binary_ops.py's order
POW, ATAN2, FLOORDIV, XDIVY, XLOGY = range(5)


@njit
def _xdivy(x, y):
    return 0.0 if x == 0 else x / y


@njit
def _fwd(k, x, y):
    if k == POW:
        return x ** y
    if k == ATAN2:
        return np.arctan2(x, y)
    if k == FLOORDIV:
        return np.floor(x / y)
    if k == XDIVY:
        return _xdivy(x, y)
    return 0.0 if x == 0 else x * np.log(y)


@njit
def _dx(k, x, y, dz):
    if k == POW:
        return dz * y * x ** (y - 1)
    if k == ATAN2:
        return dz * (y / (x * x + y * y))
    if k == FLOORDIV:
        return 0.0
    if x == 0 or dz == 0:
        return 0.0
    return dz / y if k == XDIVY else dz * np.log(y)


@njit
def _dy(k, x, y, dz):
    if k == POW:
        return dz * np.log(x) * x ** y if x > 0 else 0.0
    if k == ATAN2:
        return dz * -x / (y * y + x * x)
    if k == FLOORDIV:
        return 0.0
    return dz * _xdivy(-x, y * y) if k == XDIVY else dz * _xdivy(x, y)


@njit
def _forward(k, x, y, z):
    x, y, z = x.ravel(), y.ravel(), z.ravel()
    for i in range(z.size):
        z[i] = _fwd(k, x[i], y[i])


@njit
def _backward(k, wrt_y, x, y, dz, d):
    x, y, dz, d = x.ravel(), y.ravel(), dz.ravel(), d.ravel()
    for i in range(d.size):
        d[i] = _dy(k, x[i], y[i], dz[i]) if wrt_y else _dx(k, x[i], y[i], dz[i])


@njit
def _scalar_pow(x, e, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = x[i] ** e


@njit
def _scalar_pow_grad(x, dy, e, dx):
    x, dy, dx = x.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = e * x[i] ** (e - 1) * dy[i]


@njit
def _clip(x, lo, hi, has_lo, has_hi, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        v = x[i]
        if has_lo:
            v = v if v > lo else lo
        if has_hi:
            v = v if v < hi else hi
        y[i] = v


@njit
def _clip_grad(dy, x, lo, hi, has_lo, has_hi, dx):
    dy, x, dx = dy.ravel(), x.ravel(), dx.ravel()
    for i in range(dx.size):
        out = (has_lo and x[i] < lo) or (has_hi and x[i] > hi)
        dx[i] = 0 if out else dy[i]


def _forward_factory(k: int):
    return lambda ctx: (lambda ins, outs: _forward(k, ins[0], ins[1], outs[0]))


def _backward_factory(k: int, wrt_y: bool):
    return lambda ctx: (lambda ins, outs: _backward(k, wrt_y, ins[0], ins[1], ins[2], outs[0]))


@register_kernel("scalar_pow", "numba")
def _scalar_pow_f(ctx: KernelCtx) -> KernelFn:
    e = ctx.in_descs[0].dtype.np.type(ctx.attrs["exponent"])
    return lambda ins, outs: _scalar_pow(ins[0], e, outs[0])


@register_kernel("scalar_pow_grad", "numba")
def _scalar_pow_grad_f(ctx: KernelCtx) -> KernelFn:
    e = ctx.in_descs[0].dtype.np.type(ctx.attrs["exponent"])
    return lambda ins, outs: _scalar_pow_grad(ins[0], ins[1], e, outs[0])


def _bounds(ctx: KernelCtx) -> tuple:
    lo, hi = clip_bounds(ctx)
    zero = ctx.in_descs[-1].dtype.np.type(0)
    return (zero if lo is None else lo), (zero if hi is None else hi), lo is not None, hi is not None


def _clip_f(ctx: KernelCtx) -> KernelFn:
    bounds = _bounds(ctx)
    return lambda ins, outs: _clip(ins[0], *bounds, outs[0])


def _clip_grad_f(ctx: KernelCtx) -> KernelFn:
    bounds = _bounds(ctx)
    return lambda ins, outs: _clip_grad(ins[0], ins[1], *bounds, outs[0])


for _k, _name in enumerate(BINARY):
    register_kernel(_name, "numba")(_forward_factory(_k))
    register_kernel(f"{_name}_x_grad", "numba")(_backward_factory(_k, False))
    register_kernel(f"{_name}_y_grad", "numba")(_backward_factory(_k, True))
for _name in ("clip_by_scalar", "clip_by_scalar_min", "clip_by_scalar_max"):
    register_kernel(_name, "numba")(_clip_f)
    register_kernel(f"{_name}_grad", "numba")(_clip_grad_f)
