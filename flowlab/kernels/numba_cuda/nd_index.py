"""CUDA kernels of the N-d indexing ops (see kernels/reference/nd_index.py for what each computes). The N-d
indices are read back and checked on the host (one sync), which also turns them into flat slice numbers. The
scatters run one thread per output element looping over the updates in order: no atomics, so duplicate indices
sum in the CPU kernels' order and tensor_scatter_nd_update's last duplicate wins, as on the CPU."""

from __future__ import annotations

import numpy as np

from ..reference.nd_index import nd_geometry, nd_offsets
from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, flat, launch1, read_back
from .elementwise import filler
from .layout import IndexCheck


@cuda.jit
def _gather_nd(params, offsets, out, inner):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = params[offsets[i // inner] * inner + i % inner]


@cuda.jit
def _scatter_nd(base, offsets, updates, out, inner, add):
    # base: params, or out itself already zeroed
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        s, e = i // inner, i % inner
        value = base[i]
        for r in range(offsets.size):
            if offsets[r] == s:
                if add:
                    value += updates[r * inner + e]
                else:
                    value = updates[r * inner + e]
        out[i] = value


def _factory(ctx: KernelCtx, indices_arg: int, updates_arg: int, base: bool, add: bool):
    gather = ctx.op.op_type == "gather_nd"
    params = (ctx.in_descs[0] if gather else ctx.out_descs[0]).shape
    rows, k, inner = nd_geometry(params, ctx.in_descs[indices_arg].shape)
    target = {"gather_nd": "params", "scatter_nd": "shape", "scatter_nd_like": "like"}.get(ctx.op.op_type, "params")
    threads, zero = current_launch().threads, filler(ctx.out_descs[0].dtype.np, 0)

    def run(ins, outs, stream=0):
        host = read_back(ins[indices_arg], stream).reshape(rows, k)
        offsets = cuda.to_device(nd_offsets(host, params, target), stream=stream)
        if gather:
            launch1(_gather_nd, outs[0].size, threads, stream, flat(ins[0]), offsets, flat(outs[0]), inner)
            return
        if not base:
            zero(outs[0], stream)
        src = flat(ins[0]) if base else flat(outs[0])
        launch1(_scatter_nd, outs[0].size, threads, stream, src, offsets, flat(ins[updates_arg]), flat(outs[0]),
                inner, add)

    return run


register_kernel("gather_nd", "numba", "gpu")(lambda ctx: _factory(ctx, 1, 0, False, False))
register_kernel("scatter_nd", "numba", "gpu")(lambda ctx: _factory(ctx, 0, 1, False, True))
register_kernel("scatter_nd_like", "numba", "gpu")(lambda ctx: _factory(ctx, 1, 2, False, True))
register_kernel("tensor_scatter_nd_add", "numba", "gpu")(lambda ctx: _factory(ctx, 2, 1, True, True))
register_kernel("tensor_scatter_nd_update", "numba", "gpu")(lambda ctx: _factory(ctx, 2, 1, True, False))


def _as3(shape: tuple[int, ...], dim: int) -> tuple[int, int, int]:
    return int(np.prod(shape[:dim], dtype=np.int64)), shape[dim], int(np.prod(shape[dim + 1:], dtype=np.int64))


@cuda.jit
def _dim_gather(x, index, out, n, m, inner):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        o, e = i // (m * inner), i % inner
        out[i] = x[(o * n + index[i]) * inner + e]


@cuda.jit
def _dim_scatter_add(src, index, out, n, m, inner):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        o, t, e = i // (n * inner), (i // inner) % n, i % inner
        value = out[i]  # zeroed before the launch
        for j in range(m):
            p = (o * m + j) * inner + e
            if index[p] == t:
                value += src[p]
        out[i] = value


@register_kernel("dim_gather", "numba", "gpu")
def _dim_gather_f(ctx: KernelCtx):
    shape, dim = ctx.in_descs[0].shape, ctx.attrs["dim"]
    _o, n, inner = _as3(shape, dim)
    m = ctx.in_descs[1].shape[dim]
    check, threads = IndexCheck(n, "index", dim, "input", shape), current_launch().threads

    def run(ins, outs, stream=0):
        check(ins[1], stream)
        launch1(_dim_gather, outs[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(outs[0]), n, m, inner)

    return run


@register_kernel("dim_scatter_add_like", "numba", "gpu")
def _dim_scatter_add_f(ctx: KernelCtx):
    shape, dim = ctx.out_descs[0].shape, ctx.attrs["dim"]
    _o, n, inner = _as3(shape, dim)
    m = ctx.in_descs[2].shape[dim]
    check, threads = IndexCheck(n, "index", dim, "like", shape), current_launch().threads

    zero = filler(ctx.out_descs[0].dtype.np, 0)

    def run(ins, outs, stream=0):
        check(ins[2], stream)
        zero(outs[0], stream)
        launch1(_dim_scatter_add, outs[0].size, threads, stream, flat(ins[1]), flat(ins[2]), flat(outs[0]), n, m,
                inner)

    return run
