"""unsorted_segment_sum (ops/segment_ops.py): the kernels of unsorted_segment_sum_like serve it, on every device
and implementation. Those read only data and ids and take the segment count from the output's shape, which both
ops give the same way; the like op's third input is never read. A device holding a slice of the segments (the
output split on the segment axis) runs ``sliced_segment_sum`` instead, in each of those kernels."""

from __future__ import annotations

import numpy as np

from ...ir.sbp import balanced_split
from ..checks import check_indices
from ..registry import KernelCtx, KernelFn, get_kernel_factory, register_kernel


def as_like(impl: str, device: str):  # the like op's kernel (kernels/numba_cpu, numba_cuda/segment.py too)
    def factory(ctx: KernelCtx) -> KernelFn:
        return get_kernel_factory("unsorted_segment_sum_like", impl, device)(ctx)

    return factory


register_kernel("unsorted_segment_sum", "reference")(as_like("reference", "cpu"))


def segment_slice(ctx: KernelCtx) -> tuple[int, int, int] | None:
    """(lower, rows, logical) when this device holds rows [lower, lower + rows) of the output's ``logical``
    segments (the output split on the segment axis, data and ids broadcast: OneFlow's kernel offsets the ids by
    its BalancedSplitter range); None when it holds them all."""
    like = ctx.out_descs[0].shape
    rows = like[ctx.attrs["axis"] % len(like)]
    if ctx.op.op_type == "unsorted_segment_sum":
        logical = ctx.attrs["num_segments"]
    else:
        logical = ctx.attrs.get("logical_axis_size") or rows
    if logical == rows or ctx.parallel_num == 1:
        return None
    parts = balanced_split(logical, ctx.parallel_num)
    if parts[ctx.parallel_id] != rows:
        raise ValueError(f"{ctx.op.op_type} {ctx.op.name!r}: device {ctx.parallel_id} of {ctx.parallel_num} holds "
                         f"{rows} of {logical} segments; its slice has {parts[ctx.parallel_id]}")
    return sum(parts[:ctx.parallel_id]), rows, logical


def sliced_segment_sum(ctx: KernelCtx) -> KernelFn | None:
    """The kernel of a device holding a slice of the segments (see segment_slice), or None: the ids of other
    devices' segments are skipped; an id outside [0, logical) is still an error. NumPy, for every mode (the
    model-parallel case is rare; the CUDA kernel runs it through the host)."""
    found = segment_slice(ctx)
    if found is None:
        return None
    lower, rows, logical = found
    like = ctx.out_descs[0].shape
    axis = ctx.attrs["axis"] % len(like)
    whole = like[:axis] + (logical,) + like[axis + 1:]

    def kernel(ins, outs):
        data, ids, out = ins[0], ins[1], outs[0]
        check_indices(ids, logical, "segment id", axis, "like", whole)
        out[...] = 0
        local = ids.reshape(-1).astype(np.int64) - lower
        mine = (local >= 0) & (local < rows)
        moved = np.moveaxis(out, axis, 0)
        d = np.moveaxis(data.reshape(data.shape[:axis] + (local.size,) + data.shape[axis + ids.ndim:]), axis, 0)
        np.add.at(moved, local[mine], d[mine])

    return kernel
