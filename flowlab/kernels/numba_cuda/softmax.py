"""CUDA kernels over the last axis: softmax and its gradient, and the sparse and dense softmax cross entropies and
their gradients. One block per row (block-stride past the grid): the row's max and sum of exp(x - max) are block
reductions in shared memory (float64), and the loss is the log-sum-exp form ``log(sum) - (x - max)``, finite
for finite logits (kernels/reference/nn.py's log_softmax). Sparse labels are range-checked on the device before
anything is written, with checks.py's error text.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from ..checks import check_labels
from ..registry import KernelCtx, register_kernel
from ._cuda import (
    block_max,
    block_sum,
    block_threads,
    blocks,
    cuda,
    current_launch,
    exp,
    first_out_of_range,
    flat,
    launch1,
    log,
    read_back,
)


@cuda.jit(device=True)
def row_stats(shared, tid, threads, x, base, cols):
    """(max, sum of exp(x - max)) of x[base:base + cols], for every thread of the block."""
    m = numba.float64(x[base])
    for c in range(tid, cols, threads):
        v = numba.float64(x[base + c])
        if v > m or (v != v and m == m):
            m = v
    m = block_max(shared, tid, m)
    s = 0.0
    for c in range(tid, cols, threads):
        s += exp(x[base + c] - m)
    return m, block_sum(shared, tid, s)


@functools.cache
def _kernels(threads: int):
    @cuda.jit
    def softmax(x, y, rows, cols):
        shared = cuda.shared.array(threads, numba.float64)
        tid = cuda.threadIdx.x
        for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            m, s = row_stats(shared, tid, threads, x, r * cols, cols)
            for c in range(tid, cols, threads):
                y[r * cols + c] = exp(x[r * cols + c] - m) / s

    @cuda.jit
    def softmax_grad(y, dy, dx, rows, cols):
        shared = cuda.shared.array(threads, numba.float64)
        tid = cuda.threadIdx.x
        for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            part = 0.0
            for c in range(tid, cols, threads):
                part += dy[r * cols + c] * y[r * cols + c]
            dot = block_sum(shared, tid, part)
            for c in range(tid, cols, threads):
                dx[r * cols + c] = y[r * cols + c] * (dy[r * cols + c] - dot)

    @cuda.jit
    def sparse_xent(x, labels, prob, loss, rows, cols):
        shared = cuda.shared.array(threads, numba.float64)
        tid = cuda.threadIdx.x
        for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            m, s = row_stats(shared, tid, threads, x, r * cols, cols)
            for c in range(tid, cols, threads):
                prob[r * cols + c] = exp(x[r * cols + c] - m) / s
            if tid == 0:
                loss[r] = log(s) - (x[r * cols + labels[r]] - m)

    @cuda.jit
    def dense_xent(x, labels, prob, loss, rows, cols):
        shared = cuda.shared.array(threads, numba.float64)
        tid = cuda.threadIdx.x
        for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            m, s = row_stats(shared, tid, threads, x, r * cols, cols)
            log_s = log(s)
            part = 0.0
            for c in range(tid, cols, threads):
                prob[r * cols + c] = exp(x[r * cols + c] - m) / s
                part += labels[r * cols + c] * ((x[r * cols + c] - m) - log_s)
            total = block_sum(shared, tid, part)
            if tid == 0:
                loss[r] = -total

    @cuda.jit
    def dense_xent_grad(prob, labels, dy, dx, rows, cols):
        # OneFlow's ComputeDiffWithSoftmax: dy * (p - l), whatever the labels sum to (kernels/reference/loss.py)
        tid = cuda.threadIdx.x
        for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            for c in range(tid, cols, threads):
                dx[r * cols + c] = (prob[r * cols + c] - labels[r * cols + c]) * dy[r]

    return softmax, softmax_grad, sparse_xent, dense_xent, dense_xent_grad


@cuda.jit
def _sparse_xent_grad(prob, labels, dy, dx, cols):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dx.size, step):
        r, c = i // cols, i % cols
        dx[i] = (prob[i] - (1.0 if c == labels[r] else 0.0)) * dy[r]


def _rows_cols(shape: tuple[int, ...]) -> tuple[int, int]:
    return int(np.prod(shape[:-1])), shape[-1]


class LabelCheck:
    """checks.check_labels on device labels: the first bad position found on the device, read back (one sync)."""

    def __init__(self, depth: int) -> None:
        self.depth, self.threads = depth, current_launch().threads
        self.scratch = cuda.device_array(1, np.int64)

    def __call__(self, labels, stream) -> None:
        bad = first_out_of_range(labels, self.depth, stream, self.threads, self.scratch)
        if bad >= 0:
            check_labels(read_back(labels, stream), self.depth, bad)


def _row_factory(which: int, checked: bool = False):
    def factory(ctx: KernelCtx):
        launch = current_launch()
        rows, cols = _rows_cols(ctx.in_descs[0].shape)
        threads = block_threads(cols, launch.threads)
        kernel = _kernels(threads)[which]
        grid = blocks(rows, 1, launch.max_blocks)
        check = LabelCheck(cols) if checked else None

        def run(ins, outs, stream=0):
            if check is not None:
                check(ins[1], stream)
            if rows:
                kernel[grid, threads, stream](*(flat(a) for a in (*ins, *outs)), rows, cols)

        return run

    return factory


@register_kernel("sparse_softmax_cross_entropy_grad", "numba", "gpu")
def _sparse_grad(ctx: KernelCtx):
    _rows, cols = _rows_cols(ctx.in_descs[0].shape)
    check, threads = LabelCheck(cols), current_launch().threads

    def run(ins, outs, stream=0):
        check(ins[1], stream)
        launch1(_sparse_xent_grad, outs[0].size, threads, stream, *(flat(a) for a in (*ins, *outs)), cols)

    return run


register_kernel("softmax", "numba", "gpu")(_row_factory(0))
register_kernel("softmax_grad", "numba", "gpu")(_row_factory(1))
register_kernel("sparse_softmax_cross_entropy", "numba", "gpu")(_row_factory(2, checked=True))
register_kernel("softmax_cross_entropy", "numba", "gpu")(_row_factory(3))
register_kernel("softmax_cross_entropy_grad", "numba", "gpu")(_row_factory(4))
