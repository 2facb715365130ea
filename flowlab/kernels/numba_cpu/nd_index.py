"""Numba CPU kernels of the N-d indexing ops (see kernels/reference/nd_index.py for what each computes). Each
checks every index first and returns the flat position of the first bad one (or -1) before writing anything; the
Python side then raises the reference's error."""

from __future__ import annotations

import numpy as np

from ..checks import raise_out_of_range
from ..reference.nd_index import nd_geometry
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _offsets(indices, dims, offsets):
    # indices (rows, k); offsets[r] = the flat slice number; returns the flat position of a bad coordinate or -1
    for r in range(indices.shape[0]):
        off = 0
        for a in range(indices.shape[1]):
            c = indices[r, a]
            if c < 0 or c >= dims[a]:
                return r * indices.shape[1] + a
            off = off * dims[a] + c
        offsets[r] = off
    return -1


@njit
def _gather_nd(params, indices, dims, offsets, out):
    bad = _offsets(indices, dims, offsets)
    if bad < 0:
        for r in range(out.shape[0]):
            for i in range(out.shape[1]):
                out[r, i] = params[offsets[r], i]
    return bad


@njit
def _scatter_nd(base, indices, updates, dims, offsets, out, has_base, add):
    bad = _offsets(indices, dims, offsets)
    if bad < 0:
        for s in range(out.shape[0]):
            for i in range(out.shape[1]):
                out[s, i] = base[s, i] if has_base else 0
        for r in range(updates.shape[0]):
            for i in range(updates.shape[1]):
                if add:
                    out[offsets[r], i] += updates[r, i]
                else:
                    out[offsets[r], i] = updates[r, i]
    return bad


def _factory(ctx: KernelCtx, indices_arg: int, updates_arg: int, base: bool, add: bool) -> KernelFn:
    gather = ctx.op.op_type == "gather_nd"
    params = (ctx.in_descs[0] if gather else ctx.out_descs[0]).shape
    rows, k, inner = nd_geometry(params, ctx.in_descs[indices_arg].shape)
    dims, offsets = np.array(params[:k], np.int64), np.empty(rows, np.int64)
    slices = int(np.prod(params[:k], dtype=np.int64))
    target = {"gather_nd": "params", "scatter_nd": "shape", "scatter_nd_like": "like"}.get(ctx.op.op_type, "params")

    def kernel(ins, outs):
        ids = ins[indices_arg].reshape(rows, k)
        out = outs[0].reshape(-1, inner)
        if gather:
            bad = _gather_nd(ins[0].reshape(slices, inner), ids, dims, offsets, out)
        else:
            src = ins[0].reshape(slices, inner) if base else out
            bad = _scatter_nd(src, ids, ins[updates_arg].reshape(rows, inner), dims, offsets, out, base, add)
        if bad >= 0:
            raise_out_of_range(ids, bad, params[bad % k], "index", bad % k, target, params)

    return kernel


register_kernel("gather_nd", "numba")(lambda ctx: _factory(ctx, 1, 0, False, False))
register_kernel("scatter_nd", "numba")(lambda ctx: _factory(ctx, 0, 1, False, True))
register_kernel("scatter_nd_like", "numba")(lambda ctx: _factory(ctx, 1, 2, False, True))
register_kernel("tensor_scatter_nd_add", "numba")(lambda ctx: _factory(ctx, 2, 1, True, True))
register_kernel("tensor_scatter_nd_update", "numba")(lambda ctx: _factory(ctx, 2, 1, True, False))


def _as3(shape: tuple[int, ...], dim: int) -> tuple[int, int, int]:
    return int(np.prod(shape[:dim], dtype=np.int64)), shape[dim], int(np.prod(shape[dim + 1:], dtype=np.int64))


@njit
def _first_bad(index, n):
    flat = index.ravel()
    for p in range(flat.size):
        if flat[p] < 0 or flat[p] >= n:
            return p
    return -1


@njit
def _dim_gather(x, index, out):
    # x (outer, n, inner), index and out (outer, m, inner)
    bad = _first_bad(index, x.shape[1])
    if bad < 0:
        for o in range(index.shape[0]):
            for j in range(index.shape[1]):
                for i in range(index.shape[2]):
                    out[o, j, i] = x[o, index[o, j, i], i]
    return bad


@njit
def _dim_scatter_add(src, index, out):
    bad = _first_bad(index, out.shape[1])
    if bad < 0:
        out[...] = 0
        for o in range(index.shape[0]):
            for j in range(index.shape[1]):
                for i in range(index.shape[2]):
                    out[o, index[o, j, i], i] += src[o, j, i]
    return bad


@register_kernel("dim_gather", "numba")
def _dim_gather_f(ctx: KernelCtx) -> KernelFn:
    shape, dim = ctx.in_descs[0].shape, ctx.attrs["dim"]
    x3, i3 = _as3(shape, dim), _as3(ctx.in_descs[1].shape, dim)

    def kernel(ins, outs):
        bad = _dim_gather(ins[0].reshape(x3), ins[1].reshape(i3), outs[0].reshape(i3))
        raise_out_of_range(ins[1], bad, shape[dim], "index", dim, "input", shape)

    return kernel


@register_kernel("dim_scatter_add_like", "numba")
def _dim_scatter_add_f(ctx: KernelCtx) -> KernelFn:
    shape, dim = ctx.out_descs[0].shape, ctx.attrs["dim"]
    o3, i3 = _as3(shape, dim), _as3(ctx.in_descs[2].shape, dim)

    def kernel(ins, outs):
        bad = _dim_scatter_add(ins[1].reshape(i3), ins[2].reshape(i3), outs[0].reshape(o3))
        raise_out_of_range(ins[2], bad, shape[dim], "index", dim, "like", shape)

    return kernel
