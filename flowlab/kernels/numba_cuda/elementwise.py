"""CUDA kernels: elementwise math and its gradients, broadcasting binaries, bias_add, scalar ops, casts and copies,
fills, dropout and the sigmoid cross entropy.

Three generic grid-stride kernels carry every op here, each made once per device function: ``map1`` (y = f(x, p)),
``map2`` (same-shape operands) and ``map2_bcast`` (numpy broadcasting through per-operand element strides, 0 on a
broadcast axis), ``map3`` (same shape). ``p`` is the op's scalar (alpha, the scalar operand), passed as a kernel
argument so one compiled kernel serves every value.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..reference.cnn import dropout_stream
from ..reference.math import scalar_operand
from ..registry import KernelCtx, register_kernel
from ._cuda import broadcast_strides, const, cuda, current_launch, exp, flat, launch1, log, shape_array, sqrt

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@functools.cache
def map1(fn):
    @cuda.jit
    def kernel(x, y, p):
        start, step = cuda.grid(1), cuda.gridsize(1)
        for i in range(start, y.size, step):
            y[i] = fn(x[i], p)

    return kernel


@functools.cache
def map2(fn):
    @cuda.jit
    def kernel(a, b, y, p):
        start, step = cuda.grid(1), cuda.gridsize(1)
        for i in range(start, y.size, step):
            y[i] = fn(a[i], b[i], p)

    return kernel


@functools.cache
def map2_bcast(fn):
    @cuda.jit
    def kernel(a, a_strides, b, b_strides, y, shape, p):
        start, step = cuda.grid(1), cuda.gridsize(1)
        for i in range(start, y.size, step):
            rem, ao, bo = i, 0, 0
            for d in range(len(shape) - 1, -1, -1):
                k = rem % shape[d]
                rem //= shape[d]
                ao += k * a_strides[d]
                bo += k * b_strides[d]
            y[i] = fn(a[ao], b[bo], p)

    return kernel


@functools.cache
def map3(fn):
    @cuda.jit
    def kernel(a, b, c, y, p):
        start, step = cuda.grid(1), cuda.gridsize(1)
        for i in range(start, y.size, step):
            y[i] = fn(a[i], b[i], c[i], p)

    return kernel


def dev(fn):
    return cuda.jit(device=True)(fn)


# y = f(x, p)
UNARY = {
    "relu": dev(lambda x, p: x if x > 0 or x != x else 0),
    "sigmoid": dev(lambda x, p: 1.0 / (1.0 + exp(-x))),
    "tanh": dev(lambda x, p: math.tanh(x)),
    "negative": dev(lambda x, p: -x),
    "reciprocal": dev(lambda x, p: 1.0 / x),
    "exp": dev(lambda x, p: exp(x)),
    "log": dev(lambda x, p: log(x)),
    "sqrt": dev(lambda x, p: sqrt(x)),
    "square": dev(lambda x, p: x * x),
    "sign": dev(lambda x, p: 1 if x > 0 else (-1 if x < 0 else x)),  # 0 and NaN are their own sign
    "abs": dev(lambda x, p: abs(x)),
    # in float64, as the reference (the negative tail of 1 + erf cancels)
    "gelu": dev(lambda x, p: 0.5 * float(x) * (1.0 + math.erf(float(x) * _SQRT1_2))),
    "leaky_relu": dev(lambda x, p: x if x > 0 else p * x),
    "scalar_add": dev(lambda x, p: x + p),
    "scalar_mul": dev(lambda x, p: x * p),
    "copy": dev(lambda x, p: x),
}


@cuda.jit(device=True)
def _trunc_div(a, b, p):
    # C's integer division (OneFlow's kernels): rounds toward zero; x / 0 gives 0 as in the reference
    if b == 0:
        return 0
    q = a // b
    if a % b != 0 and (a < 0) != (b < 0):
        q += 1
    return q


@cuda.jit(device=True)
def _gelu_grad(x, dy, p):
    xd = float(x)
    cdf = 0.5 * (1.0 + math.erf(xd * _SQRT1_2))
    pdf = exp(-0.5 * xd * xd) * _INV_SQRT_2PI
    return dy * (cdf + xd * pdf)


# y = f(a, b, p)
BINARY = {
    "broadcast_add": dev(lambda a, b, p: a + b),
    "broadcast_sub": dev(lambda a, b, p: a - b),
    "broadcast_mul": dev(lambda a, b, p: a * b),
    "broadcast_div": dev(lambda a, b, p: a / b),
    "relu_grad": dev(lambda y, dy, p: dy if y > 0 else 0),  # OneFlow's select: an inf dy at y <= 0 gives 0
    "sigmoid_grad": dev(lambda y, dy, p: dy * y * (1 - y)),
    "tanh_grad": dev(lambda y, dy, p: dy * (1 - y * y)),
    "gelu_grad": _gelu_grad,
    "leaky_relu_grad": dev(lambda x, dy, p: dy if x > 0 else p * dy),
    "dropout_grad": dev(lambda dy, mask, p: dy * mask),
    # the stable form: max(x, 0) - x z + log(1 + exp(-|x|))
    "sigmoid_cross_entropy": dev(lambda x, z, p: (x if x > 0 else 0) - x * z + math.log1p(exp(-abs(x)))),
}


@cuda.jit(device=True)
def _sigmoid_xent_grad(x, z, dy, p):
    return (1.0 / (1.0 + exp(-x)) - z) * dy


def _unary_factory(name: str):
    def factory(ctx: KernelCtx):
        kernel, threads = map1(UNARY[name]), current_launch().threads
        p = ctx.attrs.get("alpha", 0.0) if name == "leaky_relu" else 0.0
        if name in ("scalar_add", "scalar_mul"):
            p = scalar_operand(ctx)  # in the blob's dtype: no mixed-type arithmetic, integers wrap

        def run(ins, outs, stream=0):
            launch1(kernel, outs[0].size, threads, stream, flat(ins[0]), flat(outs[0]), p)

        return run

    return factory


def binary_launcher(fn, a_shape, b_shape, out_shape, threads: int, p=0.0):
    """run(a, b, out, stream) for f(a, b) with a and b broadcast to ``out_shape``."""
    if tuple(a_shape) == tuple(b_shape) == tuple(out_shape):
        kernel = map2(fn)

        def same(a, b, out, stream):
            launch1(kernel, out.size, threads, stream, flat(a), flat(b), flat(out), p)

        return same
    kernel = map2_bcast(fn)
    a_str, b_str = const(broadcast_strides(a_shape, out_shape)), const(broadcast_strides(b_shape, out_shape))
    shape = const(shape_array(out_shape))

    def bcast(a, b, out, stream):
        launch1(kernel, out.size, threads, stream, flat(a), a_str, flat(b), b_str, flat(out), shape, p)

    return bcast


def _binary_factory(name: str):
    def factory(ctx: KernelCtx):
        fn = BINARY[name]
        if name == "broadcast_div" and not ctx.out_descs[0].dtype.is_floating:
            fn = _trunc_div
        p = ctx.attrs.get("alpha", 0.0) if name == "leaky_relu_grad" else 0.0
        run2 = binary_launcher(fn, ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.out_descs[0].shape,
                               current_launch().threads, p)
        return lambda ins, outs, stream=0: run2(ins[0], ins[1], outs[0], stream)

    return factory


@register_kernel("bias_add", "numba", "gpu")
def _bias_add(ctx: KernelCtx):
    shape = ctx.in_descs[0].shape
    axis = ctx.attrs["axis"] % len(shape)
    b_shape = tuple(d if i == axis else 1 for i, d in enumerate(shape))  # b as it broadcasts along ``axis``
    run2 = binary_launcher(BINARY["broadcast_add"], shape, b_shape, shape, current_launch().threads)
    return lambda ins, outs, stream=0: run2(ins[0], ins[1], outs[0], stream)


@register_kernel("sigmoid_cross_entropy_grad", "numba", "gpu")
def _sigmoid_xent_grad_factory(ctx: KernelCtx):
    kernel, threads = map3(_sigmoid_xent_grad), current_launch().threads

    def run(ins, outs, stream=0):
        launch1(kernel, outs[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(ins[2]), flat(outs[0]), 0.0)

    return run


@cuda.jit
def _fill(y, value):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, y.size, step):
        y[i] = value


def filler(dtype: np.dtype, value):
    """run(y, stream) filling ``y`` with ``value`` converted as ``ndarray.fill`` converts it."""
    typed = np.empty((), dtype)
    typed.fill(value)
    value, threads = typed[()], current_launch().threads
    return lambda y, stream: launch1(_fill, y.size, threads, stream, flat(y), value)


def _fill_factory(value_of):
    def factory(ctx: KernelCtx):
        fill = filler(ctx.out_descs[0].dtype.np, value_of(ctx))
        return lambda ins, outs, stream=0: fill(outs[0], stream)

    return factory


@cuda.jit
def _dropout(x, r, rate, scale, y, mask):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, y.size, step):
        mask[i] = scale if r[i] >= rate else 0.0
        y[i] = x[i] * mask[i]


@register_kernel("dropout", "numba", "gpu")
def _dropout_factory(ctx: KernelCtx):
    # The uniform draws come from the op's seeded host stream, as in both CPU modes, so a job draws the same masks
    # on every device (a device RNG would give other masks than the CPU's). One host->device copy per act.
    rate, rng, threads = ctx.attrs["rate"], dropout_stream(ctx), current_launch().threads
    scale = 1.0 / (1.0 - rate)
    uniform = np.empty(ctx.out_descs[1].shape)
    draws = cuda.device_array(uniform.size, np.float64)

    def run(ins, outs, stream=0):
        rng.random(out=uniform)
        draws.copy_to_device(uniform.reshape(-1), stream=stream)
        launch1(_dropout, outs[0].size, threads, stream, flat(ins[0]), draws, rate, scale, flat(outs[0]),
                flat(outs[1]))

    return run


for _name in UNARY:
    if _name != "copy":
        register_kernel(_name, "numba", "gpu")(_unary_factory(_name))
for _name in ("reshape", "identity", "cast"):
    register_kernel(_name, "numba", "gpu")(_unary_factory("copy"))
for _name in BINARY:
    register_kernel(_name, "numba", "gpu")(_binary_factory(_name))
register_kernel("constant", "numba", "gpu")(_fill_factory(lambda ctx: ctx.attrs["value"]))
register_kernel("zeros_like", "numba", "gpu")(_fill_factory(lambda ctx: 0))
register_kernel("ones_like", "numba", "gpu")(_fill_factory(lambda ctx: 1))
