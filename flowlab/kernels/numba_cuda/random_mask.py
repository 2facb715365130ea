"""CUDA kernel of ops/random_mask_ops.py (random_mask_like): the op's seeded host-stream draws copied to the device
(as the GPU dropout kernel), compared there."""

from __future__ import annotations

import numpy as np

from ..reference.cnn import dropout_stream
from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, flat, launch1


@cuda.jit
def _mask(r, rate, out):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = 1 if r[i] >= rate else 0


@register_kernel("random_mask_like", "numba", "gpu")
def _random_mask_like(ctx: KernelCtx):
    rate, rng, threads = ctx.attrs["rate"], dropout_stream(ctx), current_launch().threads
    uniform = np.empty(ctx.out_descs[0].shape)
    draws = cuda.device_array(uniform.size, np.float64)

    def run(ins, outs, stream=0):
        rng.random(out=uniform)
        draws.copy_to_device(uniform.reshape(-1), stream=stream)
        launch1(_mask, outs[0].size, threads, stream, draws, rate, flat(outs[0]))

    return run
