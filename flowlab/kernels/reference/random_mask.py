"""NumPy reference kernel of ops/random_mask_ops.py (random_mask_like): the op's seeded host stream (dropout's,
kernels/reference/cnn.py), 1 where a uniform draw is >= rate."""

from __future__ import annotations

from ..registry import KernelCtx, KernelFn, register_kernel
from .cnn import dropout_stream


@register_kernel("random_mask_like", "reference")
def _random_mask_like(ctx: KernelCtx) -> KernelFn:
    rate, rng = ctx.attrs["rate"], dropout_stream(ctx)

    def kernel(ins, outs):
        outs[0][...] = rng.random(outs[0].shape) >= rate  # a new mask each run

    return kernel
