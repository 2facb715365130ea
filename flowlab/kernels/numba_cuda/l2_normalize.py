"""CUDA kernels of ops/l2_normalize_ops.py, one thread per (outer, inner) line along the axis, as OneFlow's kernel
loops; kernels/reference/l2_normalize.py says what they compute."""

from __future__ import annotations

import math

from ..numba_cpu.l2_normalize import view3
from ..reference.l2_normalize import epsilon_of
from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, launch1


@cuda.jit
def _l2(x, y, s, eps, zero):
    start, step = cuda.grid(1), cuda.gridsize(1)
    inner_n = x.shape[2]
    for t in range(start, x.shape[0] * inner_n, step):
        o, i = t // inner_n, t % inner_n
        acc = zero  # not x * 0: an inf x would make it NaN
        for j in range(x.shape[1]):
            acc += x[o, j, i] * x[o, j, i]
        s[o, 0, i] = acc
        norm = math.sqrt(max(acc, eps))
        for j in range(x.shape[1]):
            y[o, j, i] = x[o, j, i] / norm


@cuda.jit
def _l2_grad(dy, y, s, dx, eps, zero):
    start, step = cuda.grid(1), cuda.gridsize(1)
    inner_n = dy.shape[2]
    for t in range(start, dy.shape[0] * inner_n, step):
        o, i = t // inner_n, t % inner_n
        norm = math.sqrt(max(s[o, 0, i], eps))
        if s[o, 0, i] >= eps:
            inner = zero
            for j in range(dy.shape[1]):
                inner += dy[o, j, i] * y[o, j, i]
            for j in range(dy.shape[1]):
                dx[o, j, i] = (dy[o, j, i] - inner * y[o, j, i]) / norm
        else:
            for j in range(dy.shape[1]):
                dx[o, j, i] = dy[o, j, i] / norm


@register_kernel("l2_normalize", "numba", "gpu")
def _l2_f(ctx: KernelCtx):
    shape = ctx.in_descs[0].shape
    v, eps, threads = view3(shape, ctx.attrs["axis"] % len(shape)), epsilon_of(ctx), current_launch().threads
    s3 = (v[0], 1, v[2])

    def run(ins, outs, stream=0):
        launch1(_l2, v[0] * v[2], threads, stream, ins[0].reshape(v), outs[0].reshape(v), outs[1].reshape(s3), eps,
                eps * 0)

    return run


@register_kernel("l2_normalize_grad", "numba", "gpu")
def _l2_grad_f(ctx: KernelCtx):
    shape = ctx.in_descs[0].shape
    v, eps, threads = view3(shape, ctx.attrs["axis"] % len(shape)), epsilon_of(ctx), current_launch().threads
    s3 = (v[0], 1, v[2])

    def run(ins, outs, stream=0):
        launch1(_l2_grad, v[0] * v[2], threads, stream, ins[0].reshape(v), ins[1].reshape(v), ins[2].reshape(s3),
                outs[0].reshape(v), eps, eps * 0)

    return run
