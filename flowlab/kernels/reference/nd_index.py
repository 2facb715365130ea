"""NumPy reference kernels of the N-d indexing ops (ops/nd_index_ops.py): gather_nd, scatter_nd(_like),
tensor_scatter_nd_update/add, dim_gather and dim_scatter_add_like. Every index is checked before anything is
written, and an error names the bad coordinate, as the other indexing kernels do."""

from __future__ import annotations

import numpy as np

from ..checks import raise_out_of_range
from ..registry import KernelCtx, KernelFn, register_kernel


def nd_geometry(params: tuple[int, ...], indices: tuple[int, ...]) -> tuple[int, int, int]:
    """(rows, k, slice): the number of index rows, the coordinates per row, the elements per indexed slice."""
    k = indices[-1]
    return int(np.prod(indices[:-1], dtype=np.int64)), k, int(np.prod(params[k:], dtype=np.int64))


def nd_offsets(indices: np.ndarray, params: tuple[int, ...], target: str) -> np.ndarray:
    """The flat slice number of each index row of ``indices`` (rows, k) into ``params``'s first k axes; an
    error naming the first coordinate out of range."""
    rows, k = indices.shape
    offsets = np.zeros(rows, np.int64)
    for axis in range(k):
        column = indices[:, axis]
        bad = np.flatnonzero((column < 0) | (column >= params[axis]))
        if bad.size:
            raise_out_of_range(indices, int(bad[0]) * k + axis, params[axis], "index", axis, target, params)
        offsets = offsets * params[axis] + column
    return offsets


def _nd_factory(ctx: KernelCtx, params_arg: int, indices_arg: int):
    params = (ctx.out_descs[0] if ctx.op.op_type != "gather_nd" else ctx.in_descs[params_arg]).shape
    rows, k, inner = nd_geometry(params, ctx.in_descs[indices_arg].shape)
    target = {"gather_nd": "params", "scatter_nd": "shape", "scatter_nd_like": "like"}.get(ctx.op.op_type, "params")

    def offsets(ins):
        return nd_offsets(ins[indices_arg].reshape(rows, k), params, target)

    return params, rows, inner, offsets


@register_kernel("gather_nd", "reference")
def _gather_nd(ctx: KernelCtx) -> KernelFn:
    params, rows, inner, offsets = _nd_factory(ctx, 0, 1)

    def kernel(ins, outs):
        outs[0].reshape(rows, inner)[...] = ins[0].reshape(-1, inner)[offsets(ins)]

    return kernel


def _scatter(ctx: KernelCtx, indices_arg: int, updates_arg: int, base: bool, add: bool) -> KernelFn:
    params, rows, inner, offsets = _nd_factory(ctx, 0, indices_arg)

    def kernel(ins, outs):
        at = offsets(ins)
        out = outs[0].reshape(-1, inner)
        updates = ins[updates_arg].reshape(rows, inner)
        if base:
            out[...] = ins[0].reshape(-1, inner)
        else:
            out[...] = 0
        if add:
            np.add.at(out, at, updates)  # duplicates add up
        else:
            out[at] = updates  # duplicates: the last row wins (the CPU kernel's serial order)

    return kernel


register_kernel("scatter_nd", "reference")(lambda ctx: _scatter(ctx, 0, 1, False, True))
register_kernel("scatter_nd_like", "reference")(lambda ctx: _scatter(ctx, 1, 2, False, True))
register_kernel("tensor_scatter_nd_add", "reference")(lambda ctx: _scatter(ctx, 2, 1, True, True))
register_kernel("tensor_scatter_nd_update", "reference")(lambda ctx: _scatter(ctx, 2, 1, True, False))


def check_dim_index(index: np.ndarray, n: int, dim: int, target: str, shape: tuple[int, ...]) -> None:
    bad = np.flatnonzero((index < 0) | (index >= n))
    if bad.size:
        raise_out_of_range(index, int(bad[0]), n, "index", dim, target, shape)


@register_kernel("dim_gather", "reference")
def _dim_gather(ctx: KernelCtx) -> KernelFn:
    shape, dim = ctx.in_descs[0].shape, ctx.attrs["dim"]

    def kernel(ins, outs):
        check_dim_index(ins[1], shape[dim], dim, "input", shape)
        outs[0][...] = np.take_along_axis(ins[0], ins[1].astype(np.int64), axis=dim)

    return kernel


@register_kernel("dim_scatter_add_like", "reference")
def _dim_scatter_add(ctx: KernelCtx) -> KernelFn:
    shape, dim = ctx.out_descs[0].shape, ctx.attrs["dim"]

    def kernel(ins, outs):
        src, index = ins[1], ins[2]
        check_dim_index(index, shape[dim], dim, "like", shape)
        out = outs[0]
        out[...] = 0
        coords = list(np.indices(src.shape, sparse=True))
        coords[dim] = index
        np.add.at(out, tuple(coords), src)

    return kernel
