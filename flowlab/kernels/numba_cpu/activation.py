"""Numba CPU kernels of ops/activation_ops.py (elu, hardsigmoid, hardswish, hardtanh, gelu, leaky_relu and their
gradients); the reference module (kernels/reference/activation.py) says what each computes."""

from __future__ import annotations

import math as _m

from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _elu(x, y, alpha):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = x[i] if x[i] > 0 else alpha * _m.expm1(x[i])


@njit
def _elu_grad(x, dy, dx, alpha):
    x, dy, dx = x.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = dy[i] if x[i] > 0 else dy[i] * alpha * _m.exp(x[i])


@njit
def _hardsigmoid(x, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        v = x[i]
        y[i] = 0 if v <= -3 else (1 if v >= 3 else v / 6 + 0.5)


@njit
def _hardsigmoid_grad(x, dy, dx):
    x, dy, dx = x.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = dy[i] / 6 if -3 < x[i] < 3 else 0


@njit
def _hardswish(x, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        v = x[i]
        y[i] = 0 if v <= -3 else (v if v >= 3 else v * (v + 3) / 6)


@njit
def _hardswish_grad(x, dy, dx):
    x, dy, dx = x.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        v = x[i]
        dx[i] = 0 if v <= -3 else (dy[i] if v >= 3 else (v / 3 + 0.5) * dy[i])


@njit
def _hardtanh(x, y, lo, hi):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        v = x[i]
        y[i] = hi if v > hi else (lo if v < lo else v)


@njit
def _hardtanh_grad(y, dy, dx, lo, hi):
    y, dy, dx = y.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = dy[i] if y[i] != lo and y[i] != hi else 0


def _factory(fn, attrs: tuple[str, ...]):
    def factory(ctx: KernelCtx) -> KernelFn:
        dt = ctx.out_descs[0].dtype.np
        params = tuple(dt.type(ctx.attrs[a]) for a in attrs)  # in the blob's dtype, as OneFlow's kernels
        return lambda ins, outs: fn(*ins, outs[0], *params)

    return factory


for _name, _fn, _attrs in (
    ("elu", _elu, ("alpha",)), ("elu_grad", _elu_grad, ("alpha",)),
    ("hardsigmoid", _hardsigmoid, ()), ("hardsigmoid_grad", _hardsigmoid_grad, ()),
    ("hardswish", _hardswish, ()), ("hardswish_grad", _hardswish_grad, ()),
    ("hardtanh", _hardtanh, ("min_val", "max_val")), ("hardtanh_grad", _hardtanh_grad, ("min_val", "max_val")),
):
    register_kernel(_name, "numba")(_factory(_fn, _attrs))


_SQRT1_2 = 1 / _m.sqrt(2)
_INV_SQRT_2PI = 1 / _m.sqrt(2 * _m.pi)


@njit
def _gelu(x, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = 0.5 * x[i] * (1 + _m.erf(x[i] * _SQRT1_2))


@njit
def _gelu_grad(x, dy, dx):
    x, dy, dx = x.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        v = x[i]
        dx[i] = dy[i] * (0.5 * (1 + _m.erf(v * _SQRT1_2)) + v * _m.exp(-0.5 * v * v) * _INV_SQRT_2PI)


@njit
def _leaky(x, y, alpha):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = x[i] if x[i] > 0 else alpha * x[i]


@njit
def _leaky_grad(x, dy, dx, alpha):
    x, dy, dx = x.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = dy[i] if x[i] > 0 else alpha * dy[i]


@register_kernel("gelu", "numba")
def _gelu_f(ctx: KernelCtx) -> KernelFn:
    return lambda ins, outs: _gelu(ins[0], outs[0])


@register_kernel("gelu_grad", "numba")
def _gelu_grad_f(ctx: KernelCtx) -> KernelFn:
    return lambda ins, outs: _gelu_grad(ins[0], ins[1], outs[0])


@register_kernel("leaky_relu", "numba")
def _leaky_f(ctx: KernelCtx) -> KernelFn:
    alpha = ctx.in_descs[0].dtype.np.type(ctx.attrs["alpha"])
    return lambda ins, outs: _leaky(ins[0], outs[0], alpha)


@register_kernel("leaky_relu_grad", "numba")
def _leaky_grad_f(ctx: KernelCtx) -> KernelFn:
    alpha = ctx.in_descs[0].dtype.np.type(ctx.attrs["alpha"])
    return lambda ins, outs: _leaky_grad(ins[0], ins[1], outs[0], alpha)
