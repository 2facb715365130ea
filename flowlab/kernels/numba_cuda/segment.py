"""unsorted_segment_sum's CUDA kernel: unsorted_segment_sum_like's (kernels/reference/segment.py)."""

from __future__ import annotations

from ..reference.segment import as_like
from ..registry import register_kernel

register_kernel("unsorted_segment_sum", "numba", "gpu")(as_like("numba", "gpu"))
