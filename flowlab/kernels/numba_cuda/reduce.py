"""CUDA kernels that reduce: reduce_sum/mean/max, reduce_sum_like, reduce_max_grad and argmax. One block per output
element (block-stride past the grid): its threads stride over the reduced elements and combine them in shared
memory (_cuda.block_sum/block_max). Sums accumulate in float64 (int64 for integers, which wrap into the output
dtype as NumPy's do); the reduced elements are addressed through (kept shape, kept strides) and (reduced shape,
reduced strides), so any set of axes reduces without a transposed copy.

reduce_min/prod/all/any and count_not_finite: a grid-stride loop over the outputs, each thread reducing its
output's elements in order (``offset`` over the kept and reduced axes); floats accumulate in float64 as the
reference, integer products wrap as NumPy's.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from ..numba_cpu.reduce import ALL, ANY, KINDS, MIN, PROD
from ..reference.reduce import reduce_axes
from ..registry import KernelCtx, register_kernel
from ._cuda import (
    block_max,
    block_sum,
    block_threads,
    blocks,
    c_strides,
    const,
    cuda,
    current_launch,
    flat,
    gt_or_nan,
    launch1,
)
from .elementwise import filler


@cuda.jit(device=True)
def offset(i, shape, strides):
    """The element offset of flat index ``i`` over ``shape`` read through ``strides``."""
    off = 0
    for d in range(len(shape) - 1, -1, -1):
        off += (i % shape[d]) * strides[d]
        i //= shape[d]
    return off


@functools.cache
def reduce_kernel(kind: str, threads: int, acc: np.dtype, wrap_bits: int = 0, signed: bool = True):
    """kind "sum" (y = scale * sum) or "max"; ``acc``: the shared accumulator dtype. ``wrap_bits`` (an integer sum
    into a narrower integer output): the int64 sum is cut to that many bits, two's complement when ``signed``."""
    acc_t = numba.from_dtype(acc)
    is_max = kind == "max"
    wrap = wrap_bits > 0
    mask = (1 << wrap_bits) - 1 if wrap else 0
    sign = 1 << (wrap_bits - 1) if wrap and signed else 0

    @cuda.jit
    def kernel(x, y, kept_shape, kept_strides, red_shape, red_strides, nred, scale):
        shared = cuda.shared.array(threads, acc_t)
        tid = cuda.threadIdx.x
        for o in range(cuda.blockIdx.x, y.size, cuda.gridDim.x):
            base = offset(o, kept_shape, kept_strides)
            if is_max:
                best = acc_t(x[base])
                for r in range(tid, nred, threads):
                    v = acc_t(x[base + offset(r, red_shape, red_strides)])
                    if gt_or_nan(v, best):
                        best = v
                total = block_max(shared, tid, best)
            else:
                s = acc_t(0)
                for r in range(tid, nred, threads):
                    s += x[base + offset(r, red_shape, red_strides)]
                total = block_sum(shared, tid, s)
            if tid == 0:
                if wrap:  # as NumPy wraps: explicit bits, since a store of the int64 (or float) sum raises
                    w = total & mask  # OverflowError in the simulator and saturates on hardware
                    y[o] = w - ((w & sign) << 1)
                else:
                    y[o] = total if is_max else total * scale

    return kernel


def split_axes(shape: tuple[int, ...], reduced: tuple[int, ...]):
    """(kept shape, kept strides, reduced shape, reduced strides, reduced count) of a C-contiguous array."""
    strides = c_strides(shape)
    kept = [d for d in range(len(shape)) if d not in reduced]

    def pick(axes):
        return (np.array([shape[d] for d in axes] or [1], np.int64),
                np.array([strides[d] for d in axes] or [0], np.int64))

    (ks, kst), (rs, rst) = pick(kept), pick(list(reduced))
    return ks, kst, rs, rst, int(np.prod([shape[d] for d in reduced]))


def reducer(kind: str, shape: tuple[int, ...], reduced: tuple[int, ...], out_dtype: np.dtype, mean: bool = False):
    """run(x, y, stream) reducing ``x`` over ``reduced`` into ``y``."""
    launch = current_launch()
    if kind == "max":
        acc = np.dtype(np.float64) if out_dtype.kind == "f" else np.dtype(np.int64)
    else:
        acc = np.dtype(np.int64) if out_dtype.kind in "iu" and not mean else np.dtype(np.float64)
    ks, kst, rs, rst, nred = split_axes(shape, reduced)
    threads = block_threads(nred, launch.threads)
    narrow = kind == "sum" and acc.kind == "i" and out_dtype.itemsize < acc.itemsize
    kernel = reduce_kernel(kind, threads, acc, out_dtype.itemsize * 8 if narrow else 0, out_dtype.kind == "i")
    args = (const(ks), const(kst), const(rs), const(rst), nred)
    scale = 1.0 / nred if mean else 1.0

    def run(x, y, stream):
        if y.size:
            kernel[blocks(y.size, 1, launch.max_blocks), threads, stream](flat(x), flat(y), *args, scale)

    return run


def _reduce_factory(kind: str, mean: bool = False):
    def factory(ctx: KernelCtx):
        run = reducer(kind, ctx.in_descs[0].shape, reduce_axes(ctx), ctx.out_descs[0].dtype.np, mean)
        return lambda ins, outs, stream=0: run(ins[0], outs[0], stream)

    return factory


register_kernel("reduce_sum", "numba", "gpu")(_reduce_factory("sum"))
register_kernel("reduce_mean", "numba", "gpu")(_reduce_factory("sum", mean=True))
register_kernel("reduce_max", "numba", "gpu")(_reduce_factory("max"))


@register_kernel("reduce_sum_like", "numba", "gpu")
def _reduce_sum_like(ctx: KernelCtx):
    x, like = ctx.in_descs[0].shape, ctx.out_descs[0].shape
    lead = len(x) - len(like)  # numpy broadcasting undone: leading axes, and like's 1s where x is wider
    reduced = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(like) if d == 1 and x[lead + i] != 1)
    run = reducer("sum", x, reduced, ctx.out_descs[0].dtype.np)
    return lambda ins, outs, stream=0: run(ins[0], outs[0], stream)


@functools.cache
def _max_grad_kernel(threads: int):
    @cuda.jit
    def kernel(x, y, dy, dx, kept_shape, kept_strides, red_shape, red_strides, nred):
        # dx = (x == y) * dy / ties, over each reduced group (ties: how many share the max)
        shared = cuda.shared.array(threads, numba.float64)
        tid = cuda.threadIdx.x
        for o in range(cuda.blockIdx.x, y.size, cuda.gridDim.x):
            base = offset(o, kept_shape, kept_strides)
            count = 0.0
            for r in range(tid, nred, threads):
                if x[base + offset(r, red_shape, red_strides)] == y[o]:
                    count += 1.0
            ties = block_sum(shared, tid, count)
            share = dy[o] / ties  # no tie (a NaN max): dy / 0, and 0 * inf = NaN, as the reference's mask * share
            for r in range(tid, nred, threads):
                at = base + offset(r, red_shape, red_strides)
                dx[at] = (1.0 if x[at] == y[o] else 0.0) * share

    return kernel


@register_kernel("reduce_max_grad", "numba", "gpu")
def _reduce_max_grad(ctx: KernelCtx):
    launch = current_launch()
    ks, kst, rs, rst, nred = split_axes(ctx.in_descs[0].shape, reduce_axes(ctx))
    threads = block_threads(nred, launch.threads)
    kernel = _max_grad_kernel(threads)
    args = (const(ks), const(kst), const(rs), const(rst), nred)
    groups = int(np.prod(ctx.in_descs[1].shape))

    def run(ins, outs, stream=0):
        x, y, dy = ins
        kernel[blocks(groups, 1, launch.max_blocks), threads, stream](flat(x), flat(y), flat(dy), flat(outs[0]),
                                                                      *args)

    return run


@functools.cache
def _argmax_kernel(threads: int):
    @cuda.jit
    def kernel(x, y, cols):
        # the first maximum of each row (a first NaN wins, as np.argmax)
        values = cuda.shared.array(threads, numba.float64)
        where = cuda.shared.array(threads, numba.int64)
        tid = cuda.threadIdx.x
        for row in range(cuda.blockIdx.x, y.size, cuda.gridDim.x):
            best, at = numba.float64(x[row * cols]), numba.int64(0)
            for c in range(tid, cols, threads):
                v = numba.float64(x[row * cols + c])
                if gt_or_nan(v, best):
                    best, at = v, c
            values[tid], where[tid] = best, at
            cuda.syncthreads()
            half = threads // 2
            while half > 0:
                if tid < half:
                    v, c = values[tid + half], where[tid + half]
                    b = values[tid]
                    if gt_or_nan(v, b) or ((v == b or (v != v and b != b)) and c < where[tid]):
                        values[tid], where[tid] = v, c
                cuda.syncthreads()
                half //= 2
            if tid == 0:
                y[row] = where[0]
            cuda.syncthreads()

    return kernel


@register_kernel("argmax", "numba", "gpu")
def _argmax(ctx: KernelCtx):
    launch = current_launch()
    cols = ctx.in_descs[0].shape[-1]
    threads = block_threads(cols, launch.threads)
    kernel = _argmax_kernel(threads)
    rows = int(np.prod(ctx.in_descs[0].shape[:-1]))

    def run(ins, outs, stream=0):
        if rows:
            kernel[blocks(rows, 1, launch.max_blocks), threads, stream](flat(ins[0]), flat(outs[0]), cols)

    return run


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
