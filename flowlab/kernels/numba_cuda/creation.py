"""CUDA kernels of ops/creation_ops.py (see kernels/reference/creation.py): range as a host-made table copied
once, reverse as layout.py's strided copy read backwards, tril as a grid-stride map."""

from __future__ import annotations

import numpy as np

from ..reference.creation import range_values, tril_params
from ..registry import KernelCtx, register_kernel
from ._cuda import c_strides, cuda, current_launch, flat, launch1
from .layout import copier


@register_kernel("range", "numba", "gpu")
def _range(ctx: KernelCtx):
    values = cuda.to_device(range_values(ctx))
    move = copier((values.size,), 0, np.array([1], np.int64), 0, np.array([1], np.int64))
    return lambda ins, outs, stream=0: move(values, outs[0], stream)


@register_kernel("reverse", "numba", "gpu")
def _reverse(ctx: KernelCtx):
    shape, axes = ctx.in_descs[0].shape, set(ctx.attrs["axis"])
    strides = c_strides(shape)
    base = int(sum((shape[d] - 1) * strides[d] for d in axes))  # the source starts at the far end of each axis
    src = np.array([-s if d in axes else s for d, s in enumerate(strides)], np.int64)
    move = copier(shape, base, src, 0, strides)
    return lambda ins, outs, stream=0: move(ins[0], outs[0], stream)


@cuda.jit
def _tril(x, out, m, n, diagonal, fill, scale):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for k in range(start, out.size, step):
        j = k % n
        i = (k // n) % m
        out[k] = x[k] * scale if j <= i + diagonal else fill


def _tril_factory(ctx: KernelCtx):
    diagonal, fill, scale = tril_params(ctx)
    m, n = ctx.in_descs[0].shape[-2:]
    threads = current_launch().threads
    return lambda ins, outs, stream=0: launch1(_tril, outs[0].size, threads, stream, flat(ins[0]), flat(outs[0]), m,
                                               n, diagonal, fill, scale)


register_kernel("tril", "numba", "gpu")(_tril_factory)
register_kernel("fused_scale_tril", "numba", "gpu")(_tril_factory)
