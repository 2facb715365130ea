"""CUDA kernels of the model-parallel loss (ops/model_parallel.py), one thread per row (per element for the
gradient); semantics as kernels/reference/model_parallel.py: a ``_ms`` kernel's slice of the class axis starts at
``class_offset``, and labels are range-checked on the device against the whole class count first."""

from __future__ import annotations

import numpy as np

from ..reference.model_parallel import class_offset, slice_bounds, whole_classes_only
from ..reference.two_stage import last_axis_only
from ..registry import KernelCtx, register_kernel
from ._cuda import const, cuda, current_launch, flat, launch1, log
from .softmax import LabelCheck, _row_factory
from .two_stage import stage


@cuda.jit
def _cross_entropy_ms(p, labels, out, lower, cols):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for r in range(start, out.size, step):
        c = labels[r] - lower
        out[r] = -log(p[r * cols + c]) if 0 <= c < cols else 0.0


@cuda.jit
def _xent_ms_grad(prob, labels, dy, dx, lower, cols):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dx.size, step):
        r, c = i // cols, i % cols
        dx[i] = (prob[i] - (1.0 if c == labels[r] - lower else 0.0)) * dy[r]


@cuda.jit
def _stage_rows(x, bounds, out, mask, count, rows, cols):
    parts = bounds.size - 1
    start, step = cuda.grid(1), cuda.gridsize(1)
    for r in range(start, rows, step):
        for j in range(parts):
            lo, hi = bounds[j], bounds[j + 1]
            m = x[r * cols + lo]
            for c in range(lo + 1, hi):
                v = x[r * cols + c]
                if v > m or (v != v and m == m):  # a NaN is the maximum, as np.max has it
                    m = v
            out[r * parts + j] = m
            n = 0
            for c in range(lo, hi):
                hit = x[r * cols + c] == m
                mask[r * cols + c] = 1 if hit else 0
                n += 1 if hit else 0
            count[r * parts + j] = n


def _rows_cols(ctx: KernelCtx) -> tuple[int, int]:
    shape = ctx.in_descs[0].shape
    return int(np.prod(shape[:-1])), shape[-1]


@register_kernel("sparse_cross_entropy_ms", "numba", "gpu")
def _cross_entropy_ms_factory(ctx: KernelCtx):
    rows, cols = _rows_cols(ctx)
    lower, threads = class_offset(ctx, cols), current_launch().threads
    check = LabelCheck(ctx.attrs["depth"])

    def run(ins, outs, stream=0):
        check(ins[1], stream)
        launch1(_cross_entropy_ms, rows, threads, stream, flat(ins[0]), flat(ins[1]), flat(outs[0]), lower, cols)

    return run


@register_kernel("sparse_softmax_cross_entropy_ms_grad", "numba", "gpu")
def _xent_ms_grad_factory(ctx: KernelCtx):
    rows, cols = _rows_cols(ctx)
    lower, threads = class_offset(ctx, cols), current_launch().threads
    check = LabelCheck(ctx.attrs["depth"])

    def run(ins, outs, stream=0):
        check(ins[1], stream)
        launch1(_xent_ms_grad, rows * cols, threads, stream, *(flat(a) for a in (*ins, *outs)), lower, cols)

    return run


@register_kernel("sparse_softmax_cross_entropy_ms", "numba", "gpu")
def _xent_ms_factory(ctx: KernelCtx):
    return whole_classes_only(ctx, _row_factory(2, checked=True))


@register_kernel("reduce_max_device_stage", "numba", "gpu")
def _device_stage_factory(ctx: KernelCtx):
    if not last_axis_only(ctx):  # two_stage_reduce's other axes
        return stage(True, True)(ctx)
    rows, cols = _rows_cols(ctx)
    bounds = const(slice_bounds(cols, ctx.out_descs[0].shape[-1]).astype(np.int64))
    threads = current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_stage_rows, rows, threads, stream, flat(ins[0]), bounds, *(flat(a) for a in outs), rows, cols)

    return run


@register_kernel("reduce_max_global_stage", "numba", "gpu")
def _global_stage_factory(ctx: KernelCtx):
    """The device stage's loop over one part; its count is scratch (the gradient's business)."""
    if not last_axis_only(ctx):
        return stage(True, False)(ctx)
    rows, cols = _rows_cols(ctx)
    bounds = const(np.array([0, cols], np.int64))
    count = cuda.device_array(max(rows, 1), np.int32)
    threads = current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_stage_rows, rows, threads, stream, flat(ins[0]), bounds, flat(outs[0]), flat(outs[1]), count,
                rows, cols)

    return run
