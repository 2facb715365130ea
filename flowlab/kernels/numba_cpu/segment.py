"""unsorted_segment_sum's Numba CPU kernel: unsorted_segment_sum_like's (kernels/reference/segment.py)."""

from __future__ import annotations

from ..registry import KernelCtx, KernelFn, get_kernel_factory, register_kernel


@register_kernel("unsorted_segment_sum", "numba")
def _segment_sum_f(ctx: KernelCtx) -> KernelFn:
    return get_kernel_factory("unsorted_segment_sum_like", "numba")(ctx)
