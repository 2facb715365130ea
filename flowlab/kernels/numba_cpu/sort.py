"""Numba CPU kernels of ops/sort_ops.py: NumPy's stable sort (see kernels/reference/sort.py) is the fast path for
a sort, so these call it outside Numba."""

from __future__ import annotations

from ..reference import sort as ref
from ..registry import register_kernel

for _name in ("sort", "arg_sort", "top_k"):
    register_kernel(_name, "numba")(getattr(ref, f"_{_name}"))
register_kernel("in_top_k", "numba")(ref._in_top_k)  # a few vector ops per row: NumPy's
