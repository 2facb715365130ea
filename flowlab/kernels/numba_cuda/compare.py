"""CUDA kernels: comparisons (int8 out), maximum/minimum and their gradient, floor mod, where and
broadcast_to_compatible_with (see kernels/reference/compare.py), on elementwise.py's grid-stride maps."""

from __future__ import annotations

import math

from ..registry import KernelCtx, register_kernel
from ._cuda import broadcast_strides, c_strides, cuda, current_launch, flat, launch1
from .elementwise import binary_launcher, dev
from .layout import copier


@cuda.jit(device=True)
def _float_mod(a, b, p):
    if b == 0:
        return math.nan  # as NumPy (the simulator's Python ``%`` would raise)
    return a % b  # the remainder with b's sign (Python's, OneFlow's FloorMod)


@cuda.jit(device=True)
def _int_mod(a, b, p):
    if b == 0:
        return 0  # as NumPy
    return a % b


BINARY = {
    "broadcast_equal": dev(lambda a, b, p: 1 if a == b else 0),
    "broadcast_not_equal": dev(lambda a, b, p: 1 if a != b else 0),
    "broadcast_greater": dev(lambda a, b, p: 1 if a > b else 0),
    "broadcast_greater_equal": dev(lambda a, b, p: 1 if a >= b else 0),
    "broadcast_less": dev(lambda a, b, p: 1 if a < b else 0),
    "broadcast_less_equal": dev(lambda a, b, p: 1 if a <= b else 0),
    "broadcast_logical_and": dev(lambda a, b, p: 1 if a != 0 and b != 0 else 0),
    "broadcast_maximum": dev(lambda a, b, p: a if a > b else b),
    "broadcast_minimum": dev(lambda a, b, p: a if a < b else b),
    "broadcast_floor_mod": _float_mod,
}
BINARY["elementwise_maximum"] = BINARY["broadcast_maximum"]
BINARY["elementwise_minimum"] = BINARY["broadcast_minimum"]


def _binary_factory(name: str):
    def factory(ctx: KernelCtx):
        fn = BINARY[name]
        if name == "broadcast_floor_mod" and not ctx.out_descs[0].dtype.is_floating:
            fn = _int_mod
        run2 = binary_launcher(fn, ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.out_descs[0].shape,
                               current_launch().threads)
        return lambda ins, outs, stream=0: run2(ins[0], ins[1], outs[0], stream)

    return factory


@cuda.jit
def _xmum_backward(dz, x, y, dx, dy, maximum):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dz.size, step):
        to_x = x[i] > y[i] if maximum else x[i] < y[i]
        dx[i] = dz[i] if to_x else 0
        dy[i] = 0 if to_x else dz[i]


def _xmum_backward_factory(maximum: bool):
    def factory(ctx: KernelCtx):
        threads = current_launch().threads

        def run(ins, outs, stream=0):
            launch1(_xmum_backward, ins[0].size, threads, stream, *(flat(a) for a in ins), flat(outs[0]),
                    flat(outs[1]), maximum)

        return run

    return factory


@cuda.jit
def _where(c, x, y, out):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = x[i] if c[i] != 0 else y[i]


@register_kernel("where", "numba", "gpu")
def _where_factory(ctx: KernelCtx):
    threads = current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_where, outs[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(ins[2]), flat(outs[0]))

    return run


@register_kernel("broadcast_to_compatible_with", "numba", "gpu")
def _broadcast_to_factory(ctx: KernelCtx):
    x, out = ctx.in_descs[0].shape, ctx.out_descs[0].shape
    move = copier(out, 0, broadcast_strides(x, out), 0, c_strides(out))
    return lambda ins, outs, stream=0: move(ins[0], outs[0], stream)


for _name in BINARY:
    register_kernel(_name, "numba", "gpu")(_binary_factory(_name))
register_kernel("elementwise_maximum_backward", "numba", "gpu")(_xmum_backward_factory(True))
register_kernel("elementwise_minimum_backward", "numba", "gpu")(_xmum_backward_factory(False))
