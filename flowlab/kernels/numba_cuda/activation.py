"""CUDA kernels of ops/activation_ops.py: elu, hardsigmoid, hardswish, hardtanh and their gradients (see
kernels/reference/activation.py for what each computes). One grid-stride kernel per device function, as
elementwise.py's map1/map2, with two scalars (alpha; hardtanh's min and max) passed in the blob's dtype."""

from __future__ import annotations

import functools
import math

from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, exp, flat, launch1


@functools.cache
def _map1(fn):
    @cuda.jit
    def kernel(x, y, p, q):
        start, step = cuda.grid(1), cuda.gridsize(1)
        for i in range(start, y.size, step):
            y[i] = fn(x[i], p, q)

    return kernel


@functools.cache
def _map2(fn):
    @cuda.jit
    def kernel(a, b, y, p, q):
        start, step = cuda.grid(1), cuda.gridsize(1)
        for i in range(start, y.size, step):
            y[i] = fn(a[i], b[i], p, q)

    return kernel


def _dev(fn):
    return cuda.jit(device=True)(fn)


@_dev
def _hardswish_grad(x, dy, p, q):
    if x <= -3:
        return 0
    if x >= 3:
        return dy
    return (x / 3 + 0.5) * dy


UNARY = {
    "elu": _dev(lambda x, p, q: x if x > 0 else p * math.expm1(x)),
    "hardsigmoid": _dev(lambda x, p, q: 0 if x <= -3 else (1 if x >= 3 else x / 6 + 0.5)),
    "hardswish": _dev(lambda x, p, q: 0 if x <= -3 else (x if x >= 3 else x * (x + 3) / 6)),
    "hardtanh": _dev(lambda x, p, q: q if x > q else (p if x < p else x)),
}
BINARY = {
    "elu_grad": _dev(lambda x, dy, p, q: dy if x > 0 else dy * p * exp(x)),
    "hardsigmoid_grad": _dev(lambda x, dy, p, q: dy / 6 if x > -3 and x < 3 else 0),
    "hardswish_grad": _hardswish_grad,
    "hardtanh_grad": _dev(lambda y, dy, p, q: dy if y != p and y != q else 0),
}
_ATTRS = {"elu": ("alpha",), "hardtanh": ("min_val", "max_val")}


def _scalars(ctx: KernelCtx, name: str) -> tuple:
    dt = ctx.out_descs[0].dtype.np
    attrs = _ATTRS.get(name.removesuffix("_grad"), ())
    vals = [dt.type(ctx.attrs[a]) for a in attrs] + [dt.type(0)] * (2 - len(attrs))
    return tuple(vals)


def _factory(name: str):
    def factory(ctx: KernelCtx):
        p, q = _scalars(ctx, name)
        threads = current_launch().threads
        if name in UNARY:
            kernel = _map1(UNARY[name])

            def run(ins, outs, stream=0):
                launch1(kernel, outs[0].size, threads, stream, flat(ins[0]), flat(outs[0]), p, q)
        else:
            kernel = _map2(BINARY[name])

            def run(ins, outs, stream=0):
                launch1(kernel, outs[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(outs[0]), p, q)

        return run

    return factory


for _name in (*UNARY, *BINARY):
    register_kernel(_name, "numba", "gpu")(_factory(_name))
