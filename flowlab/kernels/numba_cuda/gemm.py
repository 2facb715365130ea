"""CUDA matmul: a shared-memory tiled GEMM with register blocking, ``c = alpha * op(a) @ op(b)`` batch by batch
(grid z).

Each block computes a ``tile`` x ``tile`` patch of c with (tile / micro)^2 threads, each owning a micro x micro
sub-patch held in registers (``cuda.local.array``). Per step along k the block loads one tile x tile_k slice of
op(a) and one tile_k x tile slice of op(b) into shared memory (zeros past the edges, so any M, N, K works),
synchronizes, and every thread accumulates its sub-patch from them: each value read from shared memory feeds
``micro`` multiply-adds, which is what lets a GEMM run near the arithmetic units instead of shared-memory bandwidth.
micro = 1 and tile_k = tile is the textbook tiled GEMM. The transpose flags are strides: op(a)[i, k] is
``a[i * a_rs + k * a_cs]``, so a transposed operand is read in place, never copied.

Launch configuration (``launch_config``): ``tile`` (default 64), ``tile_k`` (8), ``micro`` (4): 256 threads per
block. Tests use tile 4 and micro 1 or 2 (the simulator runs each thread as a Python thread).
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, flat


@functools.cache
def gemm_kernel(tile: int, tile_k: int, micro: int, dtype: np.dtype):
    if tile % micro:
        raise ValueError(f"the GEMM tile ({tile}) must be a multiple of micro ({micro})")
    acc_t = numba.from_dtype(dtype)  # the operands' type: a float32 GEMM accumulates in float32, as BLAS
    side = tile // micro  # threads along each side of the block
    threads = side * side

    @cuda.jit
    def kernel(a, b, c, m, n, k, a_rs, a_cs, b_rs, b_cs, alpha):
        sa = cuda.shared.array((tile_k, tile), acc_t)  # op(a)'s slice, k-major: a thread's rows are contiguous
        sb = cuda.shared.array((tile_k, tile), acc_t)
        acc = cuda.local.array((micro, micro), acc_t)
        ra = cuda.local.array(micro, acc_t)
        rb = cuda.local.array(micro, acc_t)
        tid = cuda.threadIdx.x
        ty, tx = tid // side, tid % side
        row0, col0 = cuda.blockIdx.y * tile, cuda.blockIdx.x * tile
        batch = cuda.blockIdx.z
        a0, b0, c0 = batch * m * k, batch * k * n, batch * m * n
        for i in range(micro):
            for j in range(micro):
                acc[i, j] = 0
        for k0 in range(0, k, tile_k):
            for e in range(tid, tile * tile_k, threads):  # consecutive threads read consecutive k of a row of a
                r, kk = e // tile_k, e % tile_k
                sa[kk, r] = a[a0 + (row0 + r) * a_rs + (k0 + kk) * a_cs] if row0 + r < m and k0 + kk < k else 0
            for e in range(tid, tile * tile_k, threads):  # ... and consecutive columns of a row of b
                kk, col = e // tile, e % tile
                sb[kk, col] = b[b0 + (k0 + kk) * b_rs + (col0 + col) * b_cs] if k0 + kk < k and col0 + col < n else 0
            cuda.syncthreads()
            for kk in range(tile_k):
                for i in range(micro):
                    ra[i] = sa[kk, ty * micro + i]
                for j in range(micro):
                    rb[j] = sb[kk, tx * micro + j]
                for i in range(micro):
                    for j in range(micro):
                        acc[i, j] += ra[i] * rb[j]
            cuda.syncthreads()
        for i in range(micro):
            row = row0 + ty * micro + i
            for j in range(micro):
                col = col0 + tx * micro + j
                if row < m and col < n:
                    c[c0 + row * n + col] = acc[i, j] * alpha

    return kernel, threads


def gemm(shape_a: tuple[int, ...], shape_b: tuple[int, ...], ta: bool, tb: bool, alpha: float, dtype: np.dtype,
         tile: int | None = None, tile_k: int | None = None, micro: int | None = None):
    """run(a, b, c, stream) for device arrays of these shapes (equal batch axes); tile sizes default to the
    launch configuration's."""
    launch = current_launch()
    tile, tile_k, micro = tile or launch.tile, tile_k or launch.tile_k, micro or launch.micro
    kernel, threads = gemm_kernel(tile, tile_k, micro, np.dtype(dtype))
    m, k = (shape_a[-1], shape_a[-2]) if ta else shape_a[-2:]
    n = shape_b[-2] if tb else shape_b[-1]
    batch = int(np.prod(shape_a[:-2]))
    a_rs, a_cs = (1, m) if ta else (k, 1)  # a stored (k, m) when transposed
    b_rs, b_cs = (1, k) if tb else (n, 1)  # b stored (n, k) when transposed
    grid = ((n + tile - 1) // tile, (m + tile - 1) // tile, batch)
    typed_alpha = np.dtype(dtype).type(alpha)

    def run(a, b, c, stream):
        if c.size:
            kernel[grid, threads, stream](flat(a), flat(b), flat(c), m, n, k, a_rs, a_cs, b_rs, b_cs, typed_alpha)

    return run


@register_kernel("matmul", "numba", "gpu")
def _matmul(ctx: KernelCtx):
    run = gemm(ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.attrs["transpose_a"], ctx.attrs["transpose_b"],
               ctx.attrs["alpha"], ctx.out_descs[0].dtype.np)
    return lambda ins, outs, stream=0: run(ins[0], ins[1], outs[0], stream)
