"""CUDA kernels of ops/two_stage_ops.py (see kernels/reference/two_stage.py), one thread per output element over
its group of input elements (``groups``, a device constant); reduce_max's stages over the last axis alone are
model_parallel.py's, which call these for any other axes."""

from __future__ import annotations

import numpy as np

from ..reference.two_stage import groups
from ..registry import KernelCtx, register_kernel
from ._cuda import const, cuda, current_launch, flat, launch1


@cuda.jit
def _stage(x, g, width, out, mask, count, is_max, with_count):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for o in range(start, out.size, step):
        m = x[g[o * width]]
        for j in range(1, width):
            v = x[g[o * width + j]]
            if (v > m if is_max else v < m) or (v != v and m == m):  # a NaN wins, as np.max / np.min
                m = v
        out[o] = m
        n = 0
        for j in range(width):
            i = g[o * width + j]
            hit = x[i] == m
            mask[i] = hit
            n += hit
        if with_count:
            count[o] = n


@cuda.jit(device=True)
def _share(dy, c, is_int):
    if c == 0:
        return 0.0
    q = dy / c
    return float(int(q)) if is_int else q


@cuda.jit
def _grad(dy, mask, weight, g, width, dx, per_element, is_int):
    # per_element: weight is device_count (one per input element, masked); else count (one per output)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for o in range(start, dy.size, step):
        if per_element:
            total = 0
            for j in range(width):
                i = g[o * width + j]
                total += weight[i] * mask[i]
        else:
            total = weight[o]
        q = _share(dy[o], total, is_int)
        for j in range(width):
            i = g[o * width + j]
            dx[i] = q * (weight[i] * mask[i]) if per_element else q * mask[i]


def stage(is_max: bool, with_count: bool):
    def factory(ctx: KernelCtx):
        g = groups(ctx.in_descs[0].shape, ctx.attrs["axis"])
        n, width = g.shape
        g_dev, threads = const(g.reshape(-1)), current_launch().threads
        scratch = None if with_count else cuda.device_array(max(n, 1), np.int32)

        def run(ins, outs, stream=0):
            count = flat(outs[2]) if with_count else scratch
            launch1(_stage, n, threads, stream, flat(ins[0]), g_dev, width, flat(outs[0]), flat(outs[1]), count,
                    is_max, with_count)

        return run

    return factory


def _grad_factory(per_element: bool):
    def factory(ctx: KernelCtx):
        g = groups(ctx.in_descs[1].shape, ctx.attrs["axis"])
        n, width = g.shape
        g_dev, threads = const(g.reshape(-1)), current_launch().threads
        is_int = ctx.out_descs[0].dtype.np.kind in "iu"

        def run(ins, outs, stream=0):
            launch1(_grad, n, threads, stream, flat(ins[0]), flat(ins[1]), flat(ins[2]), g_dev, width,
                    flat(outs[0]), per_element, is_int)

        return run

    return factory


register_kernel("reduce_min_device_stage", "numba", "gpu")(stage(False, True))
register_kernel("reduce_min_global_stage", "numba", "gpu")(stage(False, False))
for _kind in ("reduce_max", "reduce_min"):
    register_kernel(f"{_kind}_device_stage_grad", "numba", "gpu")(_grad_factory(False))
    register_kernel(f"{_kind}_global_stage_grad", "numba", "gpu")(_grad_factory(True))
