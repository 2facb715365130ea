"""Numba CPU kernels of ops/unary_ops.py (see kernels/reference/unary.py): one flat loop for the forward ops and
one for their gradients, the op picked by its index in UNARY."""

from __future__ import annotations

import math as _m

import numpy as np

from ..registry import FusedCall, KernelCtx, KernelFn, fusable, register_kernel
from ._numba import njit

_2_SQRT_PI = 2.0 / _m.sqrt(_m.pi)
# ops/unary_ops.py's UNARY (kernels do not import ops)
UNARY = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "erf", "erfc", "expm1", "floor",
         "lgamma", "log1p", "log_sigmoid", "reciprocal_no_nan", "rint", "round", "rsqrt", "sin", "sinh", "softplus",
         "tan")
K = {name: i for i, name in enumerate(UNARY)}
(ACOS, ACOSH, ASIN, ASINH, ATAN, ATANH, CEIL, COS, COSH, ERF, ERFC, EXPM1, FLOOR, LGAMMA, LOG1P, LOG_SIGMOID,
 RECIPROCAL_NO_NAN, RINT, ROUND, RSQRT, SIN, SINH, SOFTPLUS, TAN) = range(len(UNARY))


@njit
def _fwd(k, x):
    if k == ACOS:
        return _m.acos(x)
    if k == ACOSH:
        return _m.acosh(x)
    if k == ASIN:
        return _m.asin(x)
    if k == ASINH:
        return _m.asinh(x)
    if k == ATAN:
        return _m.atan(x)
    if k == ATANH:
        return _m.atanh(x)
    if k == CEIL:
        return np.ceil(x)
    if k == COS:
        return _m.cos(x)
    if k == COSH:
        return _m.cosh(x)
    if k == ERF:
        return _m.erf(x)
    if k == ERFC:
        return _m.erfc(x)
    if k == EXPM1:
        return _m.expm1(x)
    if k == FLOOR:
        return np.floor(x)
    if k == LGAMMA:
        return _m.lgamma(x)
    if k == LOG1P:
        return _m.log1p(x)
    if k == LOG_SIGMOID:
        return -np.log(1 + np.exp(-x))
    if k == RECIPROCAL_NO_NAN:
        return x - x if abs(x) <= 0 else 1 / x
    if k == RINT or k == ROUND:
        return np.rint(x)  # nearbyint: halves to even
    if k == RSQRT:
        return 1 / np.sqrt(x)
    if k == SIN:
        return _m.sin(x)
    if k == SINH:
        return _m.sinh(x)
    if k == SOFTPLUS:
        return np.log(1 + np.exp(x))
    return _m.tan(x)


@njit
def _bwd(k, x, dy):
    if k == ACOS:
        return -dy / np.sqrt(1 - x * x)
    if k == ACOSH:
        return dy / np.sqrt(x * x - 1)
    if k == ASIN:
        return dy / np.sqrt(1 - x * x)
    if k == ASINH:
        return dy / np.sqrt(1 + x * x)
    if k == ATAN:
        return dy / (1 + x * x)
    if k == ATANH:
        return dy / (1 - x * x)
    if k == COS:
        return -dy * np.sin(x)
    if k == COSH:
        return dy * np.sinh(x)
    if k == ERF:
        return dy * _2_SQRT_PI * np.exp(-x * x)
    if k == ERFC:
        return -dy * _2_SQRT_PI * np.exp(-x * x)
    if k == EXPM1:
        return dy * np.exp(x)
    if k == LOG1P:
        return dy / (1 + x)
    if k == LOG_SIGMOID:
        return dy / (np.exp(x) + 1)
    if k == RECIPROCAL_NO_NAN:
        return 0.0 if abs(x) <= 0 else -dy / (x * x)
    if k == RSQRT:
        return dy * (-1 / (2 * np.sqrt(x * x * x)))
    if k == SIN:
        return dy * np.cos(x)
    if k == SINH:
        return dy * np.cosh(x)
    if k == SOFTPLUS:
        return dy * np.exp(x) / (np.exp(x) + 1)
    if k == TAN:
        c = np.cos(x)
        return dy / (c * c)
    return 0.0  # ceil, floor, rint, round: zero almost everywhere (0 for a NaN or inf dy too, as OneFlow)


@njit
def _forward(k, x, y):
    x, y = x.ravel(), y.ravel()
    for i in range(y.size):
        y[i] = _fwd(k, x[i])


@njit
def _backward(k, x, dy, dx):
    x, dy, dx = x.ravel(), dy.ravel(), dx.ravel()
    for i in range(dx.size):
        dx[i] = _bwd(k, x[i], dy[i])


def _forward_factory(k: int):
    def factory(ctx: KernelCtx) -> KernelFn:
        def kernel(ins, outs):
            _forward(k, ins[0], outs[0])

        return fusable(kernel, lambda ins, outs: FusedCall(_forward, (k, ins[0], outs[0])))

    return factory


def _backward_factory(k: int):
    def factory(ctx: KernelCtx) -> KernelFn:
        def kernel(ins, outs):
            _backward(k, ins[0], ins[1], outs[0])

        return fusable(kernel, lambda ins, outs: FusedCall(_backward, (k, ins[0], ins[1], outs[0])))

    return factory


for _name, _k in K.items():
    register_kernel(_name, "numba")(_forward_factory(_k))
    if _name != "lgamma":
        register_kernel(f"{_name}_grad", "numba")(_backward_factory(_k))
