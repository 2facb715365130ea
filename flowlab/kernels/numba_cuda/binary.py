"""CUDA kernels of ops/binary_ops.py (see kernels/reference/binary.py): the binary ops and their gradients on
elementwise.py's ``map2`` / ``map3`` (the op's index in BINARY as the kernel's ``p``), scalar_pow and the clips.
Arguments where Python's math raises in the simulator (log of 0, a float floor of inf) are answered first."""

from __future__ import annotations

import math

from ..numba_cpu.binary import ATAN2, BINARY, FLOORDIV, POW, XDIVY
from ..reference.binary import clip_bounds
from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, flat, launch1, log
from .elementwise import binary_launcher, map3
from .unary import _div, _floor


@cuda.jit(device=True)
def _xdivy(x, y):
    return 0.0 if x == 0 else _div(x, y)


@cuda.jit(device=True)
def _fwd(x, y, k):
    if k == POW:
        return x ** y
    if k == ATAN2:
        return math.atan2(x, y)
    if k == FLOORDIV:
        return _floor(_div(x, y))
    if k == XDIVY:
        return _xdivy(x, y)
    return 0.0 if x == 0 else x * log(y)


@cuda.jit(device=True)
def _dx(x, y, dz, k):
    if k == POW:
        return dz * y * x ** (y - 1)
    if k == ATAN2:
        return dz * _div(y, x * x + y * y)
    if k == FLOORDIV:
        return 0.0
    if x == 0 or dz == 0:
        return 0.0
    return _div(dz, y) if k == XDIVY else dz * log(y)


@cuda.jit(device=True)
def _dy(x, y, dz, k):
    if k == POW:
        return dz * log(x) * x ** y if x > 0 else 0.0
    if k == ATAN2:
        return dz * _div(-x, y * y + x * x)
    if k == FLOORDIV:
        return 0.0
    return dz * _xdivy(-x, y * y) if k == XDIVY else dz * _xdivy(x, y)


def _forward_factory(k: int):
    def factory(ctx: KernelCtx):
        shape = ctx.out_descs[0].shape
        run2 = binary_launcher(_fwd, shape, shape, shape, current_launch().threads, k)
        return lambda ins, outs, stream=0: run2(ins[0], ins[1], outs[0], stream)

    return factory


def _backward_factory(k: int, fn):
    def factory(ctx: KernelCtx):
        kernel, threads = map3(fn), current_launch().threads

        def run(ins, outs, stream=0):
            launch1(kernel, outs[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(ins[2]), flat(outs[0]), k)

        return run

    return factory


@cuda.jit
def _scalar_pow(x, e, y):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, y.size, step):
        y[i] = x[i] ** e


@cuda.jit
def _scalar_pow_grad(x, dy, e, dx):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dx.size, step):
        dx[i] = e * x[i] ** (e - 1) * dy[i]


@register_kernel("scalar_pow", "numba", "gpu")
def _scalar_pow_factory(ctx: KernelCtx):
    e, threads = ctx.in_descs[0].dtype.np.type(ctx.attrs["exponent"]), current_launch().threads
    return lambda ins, outs, stream=0: launch1(_scalar_pow, outs[0].size, threads, stream, flat(ins[0]), e,
                                               flat(outs[0]))


@register_kernel("scalar_pow_grad", "numba", "gpu")
def _scalar_pow_grad_factory(ctx: KernelCtx):
    e, threads = ctx.in_descs[0].dtype.np.type(ctx.attrs["exponent"]), current_launch().threads
    return lambda ins, outs, stream=0: launch1(_scalar_pow_grad, outs[0].size, threads, stream, flat(ins[0]),
                                               flat(ins[1]), e, flat(outs[0]))


@cuda.jit
def _clip(x, lo, hi, has_lo, has_hi, y):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, y.size, step):
        v = x[i]
        if has_lo:
            v = v if v > lo else lo
        if has_hi:
            v = v if v < hi else hi
        y[i] = v


@cuda.jit
def _clip_grad(dy, x, lo, hi, has_lo, has_hi, dx):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dx.size, step):
        out = (has_lo and x[i] < lo) or (has_hi and x[i] > hi)
        dx[i] = 0 if out else dy[i]


def _bounds(ctx: KernelCtx) -> tuple:
    lo, hi = clip_bounds(ctx)
    zero = ctx.in_descs[-1].dtype.np.type(0)
    return (zero if lo is None else lo), (zero if hi is None else hi), lo is not None, hi is not None


def _clip_factory(ctx: KernelCtx):
    bounds, threads = _bounds(ctx), current_launch().threads
    return lambda ins, outs, stream=0: launch1(_clip, outs[0].size, threads, stream, flat(ins[0]), *bounds,
                                               flat(outs[0]))


def _clip_grad_factory(ctx: KernelCtx):
    bounds, threads = _bounds(ctx), current_launch().threads
    return lambda ins, outs, stream=0: launch1(_clip_grad, outs[0].size, threads, stream, flat(ins[0]),
                                               flat(ins[1]), *bounds, flat(outs[0]))


for _k, _name in enumerate(BINARY):
    register_kernel(_name, "numba", "gpu")(_forward_factory(_k))
    register_kernel(f"{_name}_x_grad", "numba", "gpu")(_backward_factory(_k, _dx))
    register_kernel(f"{_name}_y_grad", "numba", "gpu")(_backward_factory(_k, _dy))
for _name in ("clip_by_scalar", "clip_by_scalar_min", "clip_by_scalar_max"):
    register_kernel(_name, "numba", "gpu")(_clip_factory)
    register_kernel(f"{_name}_grad", "numba", "gpu")(_clip_grad_factory)
