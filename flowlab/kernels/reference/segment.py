"""unsorted_segment_sum (ops/segment_ops.py): the kernels of unsorted_segment_sum_like serve it, on every device
and implementation. Those read only data and ids and take the segment count from the output's shape, which both
ops give the same way; the like op's third input is never read."""

from __future__ import annotations

from ..registry import KernelCtx, KernelFn, get_kernel_factory, register_kernel


def _as_like(impl: str, device: str):
    def factory(ctx: KernelCtx) -> KernelFn:
        return get_kernel_factory("unsorted_segment_sum_like", impl, device)(ctx)

    return factory


for _impl, _device in (("reference", "cpu"), ("numba", "cpu"), ("numba", "gpu")):
    register_kernel("unsorted_segment_sum", _impl, _device)(_as_like(_impl, _device))
