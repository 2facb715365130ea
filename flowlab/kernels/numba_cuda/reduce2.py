"""CUDA kernels of ops/reduce_ops2.py (see kernels/reference/reduce2.py): a grid-stride loop over the outputs,
each thread reducing its output's elements in order (reduce.py's offsets over the kept and reduced axes); floats
accumulate in float64 as the reference, integer products wrap as NumPy's."""

from __future__ import annotations

import numpy as np

from ..numba_cpu.reduce2 import ALL, ANY, KINDS, MIN, PROD
from ..reference.reduce import reduce_axes
from ..registry import KernelCtx, register_kernel
from ._cuda import const, cuda, current_launch, flat, launch1
from .elementwise import filler
from .reduce import offset, split_axes

_MASK = (1 << 64) - 1


@cuda.jit
def _reduce(x, y, ks, kst, rs, rst, nred, k, one):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for o in range(start, y.size, step):
        base = offset(o, ks, kst)
        if k == MIN:
            m = x[base]
            for r in range(1, nred):
                v = x[base + offset(r, rs, rst)]
                if v < m or v != v:
                    m = v
            y[o] = m
        elif k == PROD:
            p = one
            for r in range(nred):
                p = p * x[base + offset(r, rs, rst)]
            y[o] = p
        else:
            hit = k == ANY
            found = False
            for r in range(nred):
                if (x[base + offset(r, rs, rst)] != 0) == hit:
                    found = True
                    break
            y[o] = 1 if found == hit else 0


@cuda.jit
def _int_prod(x, y, ks, kst, rs, rst, nred, bits, signed):
    # integer products kept to 64 bits by hand (the simulator's Python ints would grow), then wrapped to y's width
    start, step = cuda.grid(1), cuda.gridsize(1)
    for o in range(start, y.size, step):
        base = offset(o, ks, kst)
        p = 1
        for r in range(nred):
            p = (p * int(x[base + offset(r, rs, rst)])) & _MASK
        w = p & ((1 << bits) - 1)
        if signed and w >= (1 << (bits - 1)):
            w -= 1 << bits
        y[o] = w


def _factory(k: int):
    def factory(ctx: KernelCtx):
        ks, kst, rs, rst, nred = split_axes(ctx.in_descs[0].shape, reduce_axes(ctx))
        args = (const(ks), const(kst), const(rs), const(rst), nred)
        dtype, threads = ctx.in_descs[0].dtype.np, current_launch().threads
        if k == PROD and dtype.kind in "iu":
            bits, signed = dtype.itemsize * 8, dtype.kind == "i"
            return lambda ins, outs, stream=0: launch1(_int_prod, outs[0].size, threads, stream, flat(ins[0]),
                                                       flat(outs[0]), *args, bits, signed)
        one = np.float64(1)

        def run(ins, outs, stream=0):
            launch1(_reduce, outs[0].size, threads, stream, flat(ins[0]), flat(outs[0]), *args, k, one)

        return run

    return factory


for _k, _name in enumerate(KINDS):
    register_kernel(_name, "numba", "gpu")(_factory(_k))
assert (MIN, PROD, ALL, ANY) == (0, 1, 2, 3)


@cuda.jit
def _count_not_finite(x, y):
    # one atomic add per block of the block's count would be faster; per element is simple and exact
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, x.size, step):
        v = x[i]
        if v != v or v - v != 0:
            cuda.atomic.add(y, 0, 1)


def _count_factory(ctx: KernelCtx):
    threads, zero = current_launch().threads, filler(np.dtype(np.int64), 0)

    def run(ins, outs, stream=0):
        zero(outs[0], stream)
        for x in ins:
            launch1(_count_not_finite, x.size, threads, stream, flat(x), flat(outs[0]))

    return run


register_kernel("count_not_finite", "numba", "gpu")(_count_factory)
register_kernel("multi_count_not_finite", "numba", "gpu")(_count_factory)
