"""slice_update's CUDA kernel (see kernels/reference/slice_update.py): x copied whole, then update copied into the
slice's window (layout.py's strided copier, as slice_grad's)."""

from __future__ import annotations

from ..registry import KernelCtx, register_kernel
from ._cuda import c_strides
from .layout import _slice_window, copier


@register_kernel("slice_update", "numba", "gpu")
def _slice_update_f(ctx: KernelCtx):
    shape, update = ctx.in_descs[0].shape, ctx.in_descs[1].shape
    base, strides = _slice_window(ctx, shape)
    whole = copier(shape, 0, c_strides(shape), 0, c_strides(shape))
    into = copier(update, 0, c_strides(update), base, strides)

    def run(ins, outs, stream=0):
        whole(ins[0], outs[0], stream)
        into(ins[1], outs[0], stream)

    return run
