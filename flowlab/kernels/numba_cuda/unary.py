"""CUDA kernels of ops/unary_ops.py (see kernels/reference/unary.py) on elementwise.py's ``map1`` / ``map2``: one
device function for the forward ops and one for the gradients, the op picked by the kernel's ``p`` argument (its
index in UNARY). Out-of-domain and non-finite arguments are answered before Python's math is reached, which raises
in the simulator where the GPU returns NaN or inf (acos(2), sin(inf), cosh(1000), lgamma(0), 1 / 0.0)."""

from __future__ import annotations

import math

from ..numba_cpu.unary import (
    ACOS,
    ACOSH,
    ASIN,
    ASINH,
    ATAN,
    ATANH,
    CEIL,
    COS,
    COSH,
    ERF,
    ERFC,
    EXPM1,
    FLOOR,
    LGAMMA,
    LOG1P,
    LOG_SIGMOID,
    RECIPROCAL_NO_NAN,
    RINT,
    ROUND,
    SIN,
    SINH,
    SOFTPLUS,
    TAN,
    K,
)
from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, exp, flat, launch1, log, sqrt
from .elementwise import binary_launcher, map1

_2_SQRT_PI = 2.0 / math.sqrt(math.pi)
_BIG = 4503599627370496.0  # 2**52: every float this large is an integer already


@cuda.jit(device=True)
def _div(a, b):
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


@cuda.jit(device=True)
def _floor(x):
    if x != x or abs(x) >= _BIG:
        return x
    f = float(math.floor(x))
    return f


@cuda.jit(device=True)
def _rint(x):
    # nearbyint: the nearest integer, halves to even
    if x != x or abs(x) >= _BIG:
        return x
    f = _floor(x)
    d = x - f
    if d > 0.5 or (d == 0.5 and math.fmod(f, 2.0) != 0):
        return f + 1.0
    return f


@cuda.jit(device=True)
def _fwd(x, k):
    if x != x:
        return x
    inf = abs(x) == math.inf
    if k == ACOS or k == ASIN:
        if abs(x) > 1:
            return math.nan
        return math.acos(x) if k == ACOS else math.asin(x)
    if k == ACOSH:
        if x < 1:
            return math.nan
        return math.inf if inf else math.acosh(x)
    if k == ASINH:
        return x if inf else math.asinh(x)
    if k == ATAN:
        return math.atan(x)
    if k == ATANH:
        if abs(x) > 1:
            return math.nan
        if abs(x) == 1:
            return math.copysign(math.inf, x)
        return math.atanh(x)
    if k == CEIL:
        return -_floor(-x)
    if k == FLOOR:
        return _floor(x)
    if k == RINT or k == ROUND:
        return _rint(x)
    if k == COS or k == SIN or k == TAN:
        if inf:
            return math.nan
        return math.cos(x) if k == COS else (math.sin(x) if k == SIN else math.tan(x))
    if k == COSH:
        return math.inf if abs(x) > 710 else math.cosh(x)
    if k == SINH:
        return math.copysign(math.inf, x) if abs(x) > 710 else math.sinh(x)
    if k == ERF:
        return math.erf(x)
    if k == ERFC:
        return math.erfc(x)
    if k == EXPM1:
        return exp(x) - 1.0 if x > 700 else math.expm1(x)
    if k == LGAMMA:
        if inf or (x <= 0 and x == _floor(x)):
            return math.inf
        return math.lgamma(x)
    if k == LOG1P:
        if x < -1:
            return math.nan
        if x == -1:
            return -math.inf
        return math.inf if inf else math.log1p(x)
    if k == LOG_SIGMOID:
        return -log(1.0 + exp(-x))
    if k == SOFTPLUS:
        return log(1.0 + exp(x))
    if k == RECIPROCAL_NO_NAN:
        return 0.0 if abs(x) <= 0 else 1.0 / x
    return _div(1.0, sqrt(x))  # rsqrt


@cuda.jit(device=True)
def _bwd(x, dy, k):
    if k == CEIL or k == FLOOR or k == RINT or k == ROUND or (k == RECIPROCAL_NO_NAN and abs(x) <= 0):
        return 0.0
    if x != x or dy != dy:
        return math.nan
    inf = abs(x) == math.inf
    if k == ACOS:
        return -_div(dy, sqrt(1.0 - x * x))
    if k == ASIN:
        return _div(dy, sqrt(1.0 - x * x))
    if k == ACOSH:
        return _div(dy, sqrt(x * x - 1.0))
    if k == ASINH:
        return _div(dy, sqrt(1.0 + x * x))
    if k == ATAN:
        return _div(dy, 1.0 + x * x)
    if k == ATANH:
        return _div(dy, 1.0 - x * x)
    if k == COS or k == SIN or k == TAN:
        if inf:
            return math.nan
        if k == COS:
            return -dy * math.sin(x)
        if k == SIN:
            return dy * math.cos(x)
        c = math.cos(x)
        return _div(dy, c * c)
    if k == COSH or k == SINH:
        if abs(x) > 710:
            big = math.copysign(math.inf, x) if k == COSH else math.inf  # sinh(x), cosh(x)
            return dy * big
        return dy * (math.sinh(x) if k == COSH else math.cosh(x))
    if k == ERF or k == ERFC:
        g = dy * _2_SQRT_PI * exp(-x * x)
        return g if k == ERF else -g
    if k == EXPM1:
        return dy * exp(x)
    if k == LOG1P:
        return _div(dy, 1.0 + x)
    if k == LOG_SIGMOID:
        return _div(dy, exp(x) + 1.0)
    if k == SOFTPLUS:
        e = exp(x)
        return _div(dy * e, e + 1.0)
    if k == RECIPROCAL_NO_NAN:
        return _div(-dy, x * x)
    return dy * _div(-1.0, 2.0 * sqrt(x * x * x))  # rsqrt


def _forward_factory(k: int):
    def factory(ctx: KernelCtx):
        kernel, threads = map1(_fwd), current_launch().threads

        def run(ins, outs, stream=0):
            launch1(kernel, outs[0].size, threads, stream, flat(ins[0]), flat(outs[0]), k)

        return run

    return factory


def _backward_factory(k: int):
    def factory(ctx: KernelCtx):
        shape = ctx.out_descs[0].shape
        run2 = binary_launcher(_bwd, shape, shape, shape, current_launch().threads, k)
        return lambda ins, outs, stream=0: run2(ins[0], ins[1], outs[0], stream)

    return factory


for _name, _k in K.items():
    register_kernel(_name, "numba", "gpu")(_forward_factory(_k))
    if _k != LGAMMA:
        register_kernel(f"{_name}_grad", "numba", "gpu")(_backward_factory(_k))
