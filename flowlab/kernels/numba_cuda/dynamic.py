"""The dynamic-blob ops' CUDA kernels (ops/dynamic_ops.py): a device-to-device copy of the piece into the start of
the static blob, and the current shape's element count written from the host (no data is read)."""

from __future__ import annotations

import math

import numpy as np

from ..reference.dynamic import included_axes
from ..registry import KernelCtx, register_kernel


@register_kernel("cast_to_static_shape", "numba", "gpu")
def _cast_to_static_shape(ctx: KernelCtx):
    def kernel(ins, outs, stream=0):
        if ins[0].size:
            outs[0].reshape(outs[0].size)[:ins[0].size].copy_to_device(ins[0].reshape(ins[0].size), stream=stream)

    return kernel


@register_kernel("shape_elem_cnt", "numba", "gpu")
def _shape_elem_cnt(ctx: KernelCtx):
    dtype = ctx.out_descs[0].dtype.np

    def kernel(ins, outs, stream=0):
        n = math.prod(ins[0].shape[a] for a in included_axes(ctx.attrs, len(ins[0].shape)))
        outs[0].copy_to_device(np.array([n], dtype), stream=stream)

    return kernel


@register_kernel("sync_dynamic_resize", "numba", "gpu")
def _sync_dynamic_resize(ctx: KernelCtx):
    return _cast_to_static_shape(ctx)  # the same prefix copy; the rows kept are the header's business


@register_kernel("argwhere", "numba", "gpu")
def _argwhere(ctx: KernelCtx):
    dtype = ctx.out_descs[0].dtype.np

    def kernel(ins, outs, stream=0):  # through the host: the count decides the shape anyway (a sync per act)
        found = np.argwhere(ins[0].copy_to_host(stream=stream)).astype(dtype)
        stream.synchronize() if stream else None
        if len(found):
            outs[0][:len(found)].copy_to_device(found, stream=stream)
        outs[1].copy_to_device(np.array([len(found)], dtype), stream=stream)

    return kernel
