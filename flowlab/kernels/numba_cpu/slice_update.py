"""slice_update's Numba CPU kernel (see kernels/reference/slice_update.py)."""

from __future__ import annotations

from ..reference.gather_slice import slices
from ..registry import KernelCtx, KernelFn, register_kernel
from .array import _copy_nd, copy_flat


@register_kernel("slice_update", "numba")
def _slice_update_f(ctx: KernelCtx) -> KernelFn:
    index = slices(ctx, ctx.in_descs[0].shape)

    def kernel(ins, outs):
        copy_flat(ins[0], outs[0])
        _copy_nd(ins[1], outs[0][index])

    return kernel
