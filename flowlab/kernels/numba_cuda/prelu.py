"""CUDA kernels of ops/prelu_ops.py (prelu, prelu_grad), one thread per element of x; alpha_diff adds
atomically (zeroed first). kernels/reference/prelu.py says what they compute."""

from __future__ import annotations

from ..reference.prelu import alpha_index
from ..registry import KernelCtx, register_kernel
from ._cuda import const, cuda, current_launch, flat, launch1
from .elementwise import filler


@cuda.jit
def _prelu(x, alpha, aidx, y, m):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, y.size, step):
        v = x[i]
        y[i] = v if v > 0 else v * alpha[aidx[i % m]]


@cuda.jit
def _prelu_grad(dy, x, alpha, aidx, dx, da, m):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dx.size, step):
        v = x[i]
        if v > 0:
            dx[i] = dy[i]
        else:
            a = aidx[i % m]
            dx[i] = dy[i] * alpha[a]
            cuda.atomic.add(da, a, dy[i] * v)


@register_kernel("prelu", "numba", "gpu")
def _prelu_f(ctx: KernelCtx):
    x_shape = ctx.in_descs[0].shape
    aidx, m = const(alpha_index(x_shape, ctx.in_descs[1].shape)), int(ctx.in_descs[0].elem_cnt // x_shape[0])
    threads = current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_prelu, outs[0].size, threads, stream, flat(ins[0]), flat(ins[1]), aidx, flat(outs[0]), m)

    return run


@register_kernel("prelu_grad", "numba", "gpu")
def _prelu_grad_f(ctx: KernelCtx):
    x_shape = ctx.in_descs[1].shape
    aidx, m = const(alpha_index(x_shape, ctx.in_descs[2].shape)), int(ctx.in_descs[1].elem_cnt // x_shape[0])
    threads, zero = current_launch().threads, filler(ctx.out_descs[1].dtype.np, 0)

    def run(ins, outs, stream=0):
        zero(flat(outs[1]), stream)
        launch1(_prelu_grad, outs[0].size, threads, stream, *(flat(a) for a in ins), aidx, flat(outs[0]),
                flat(outs[1]), m)

    return run
