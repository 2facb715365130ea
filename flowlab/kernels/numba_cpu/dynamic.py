"""The dynamic-blob ops' CPU kernels (ops/dynamic_ops.py) in the Numba tier. They copy a current piece (the
static buffer's prefix, runtime/dynamic.py), count a current shape, or find the nonzero elements: only argwhere
computes, as one pass over the flat input that unravels each hit's index."""

from __future__ import annotations

import math

import numpy as np

from ..reference.dynamic import included_axes
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _copy_prefix(src, dst):  # src's elements into the first src.size of dst (both contiguous)
    flat_src, flat_dst = src.reshape(-1), dst.reshape(-1)
    for i in range(flat_src.size):
        flat_dst[i] = flat_src[i]


@njit
def _argwhere(x, strides, out, count):  # row-major index of each nonzero element, in order
    flat, n = x.reshape(-1), 0
    for i in range(flat.size):
        if flat[i] != 0:
            rest = i
            for axis in range(strides.size):
                out[n, axis] = rest // strides[axis]
                rest = rest % strides[axis]
            n += 1
    count[0] = n


@register_kernel("cast_to_static_shape", "numba")
def _cast_to_static_shape(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        _copy_prefix(ins[0], outs[0])

    return kernel


@register_kernel("sync_dynamic_resize", "numba")
def _sync_dynamic_resize(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):  # the rows kept are a prefix: the header says how many
        _copy_prefix(ins[0], outs[0])

    return kernel


@register_kernel("shape_elem_cnt", "numba")
def _shape_elem_cnt(ctx: KernelCtx) -> KernelFn:
    attrs = ctx.attrs

    def kernel(ins, outs):  # the input's current shape (its header), never its data: nothing to compile
        outs[0][0] = math.prod(ins[0].shape[a] for a in included_axes(attrs, ins[0].ndim))

    return kernel


@register_kernel("argwhere", "numba")
def _argwhere_f(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        x = ins[0]
        strides = np.array([math.prod(x.shape[a + 1:]) for a in range(x.ndim)], dtype=np.int64)
        _argwhere(np.ascontiguousarray(x), strides, outs[0], outs[1])

    return kernel
