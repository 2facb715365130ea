"""slice_update (ops/slice_update_ops.py): x copied, then the slice overwritten by update. The NumPy reference
and the Numba CPU kernel (an njit N-d copy into the slice's view)."""

from __future__ import annotations

from ..registry import KernelCtx, KernelFn, register_kernel
from .gather_slice import slices


@register_kernel("slice_update", "reference")
def _slice_update(ctx: KernelCtx) -> KernelFn:
    index = slices(ctx, ctx.in_descs[0].shape)

    def kernel(ins, outs):
        outs[0][...] = ins[0]
        outs[0][index] = ins[1]

    return kernel
