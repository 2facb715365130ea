"""CUDA matmul: a shared-memory tiled GEMM, ``c = alpha * op(a) @ op(b)`` batch by batch (grid z).

Each block computes a tile x tile patch of c: per step along k, its threads load one tile of op(a) and one of
op(b) into shared memory (zeros past the edges, so any M, N, K works), synchronize, and accumulate the tiles'
product. The transpose flags are strides: op(a)[i, k] is ``a[i * a_rs + k * a_cs]``, so a transposed operand is
read in place, never copied. The tile edge is the launch configuration's ``tile`` (tests use 4 or 8; the
simulator runs each thread as a Python thread).
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, flat


@functools.cache
def gemm_kernel(tile: int, dtype: np.dtype):
    acc_t = numba.from_dtype(dtype)  # the operands' type: a float32 GEMM accumulates in float32, as BLAS

    @cuda.jit
    def kernel(a, b, c, m, n, k, a_rs, a_cs, b_rs, b_cs, alpha):
        sa = cuda.shared.array((tile, tile), acc_t)
        sb = cuda.shared.array((tile, tile), acc_t)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row = cuda.blockIdx.y * tile + ty
        col = cuda.blockIdx.x * tile + tx
        batch = cuda.blockIdx.z
        a0, b0, c0 = batch * m * k, batch * k * n, batch * m * n
        acc = acc_t(0)
        for t in range((k + tile - 1) // tile):
            ka = t * tile + tx
            sa[ty, tx] = a[a0 + row * a_rs + ka * a_cs] if row < m and ka < k else 0
            kb = t * tile + ty
            sb[ty, tx] = b[b0 + kb * b_rs + col * b_cs] if kb < k and col < n else 0
            cuda.syncthreads()
            for kk in range(tile):
                acc += sa[ty, kk] * sb[kk, tx]
            cuda.syncthreads()
        if row < m and col < n:
            c[c0 + row * n + col] = acc * alpha

    return kernel


def gemm(shape_a: tuple[int, ...], shape_b: tuple[int, ...], ta: bool, tb: bool, alpha: float, dtype: np.dtype,
         tile: int | None = None):
    """run(a, b, c, stream) for device arrays of these shapes (equal batch axes)."""
    tile = tile or current_launch().tile
    kernel = gemm_kernel(tile, np.dtype(dtype))
    m, k = (shape_a[-1], shape_a[-2]) if ta else shape_a[-2:]
    n = shape_b[-2] if tb else shape_b[-1]
    batch = int(np.prod(shape_a[:-2]))
    a_rs, a_cs = (1, m) if ta else (k, 1)  # a stored (k, m) when transposed
    b_rs, b_cs = (1, k) if tb else (n, 1)  # b stored (n, k) when transposed
    grid = ((n + tile - 1) // tile, (m + tile - 1) // tile, batch)
    typed_alpha = np.dtype(dtype).type(alpha)

    def run(a, b, c, stream):
        if c.size:
            kernel[grid, (tile, tile), stream](flat(a), flat(b), flat(c), m, n, k, a_rs, a_cs, b_rs, b_cs,
                                               typed_alpha)

    return run


@register_kernel("matmul", "numba", "gpu")
def _matmul(ctx: KernelCtx):
    run = gemm(ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.attrs["transpose_a"], ctx.attrs["transpose_b"],
               ctx.attrs["alpha"], ctx.out_descs[0].dtype.np)
    return lambda ins, outs, stream=0: run(ins[0], ins[1], outs[0], stream)
