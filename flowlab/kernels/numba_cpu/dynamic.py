"""The dynamic-blob ops' CPU kernels (ops/dynamic_ops2.py) in the Numba tier: the reference's, which only move
bytes and read shapes."""

from __future__ import annotations

from ..reference.dynamic import cast_to_static_shape, shape_elem_cnt
from ..registry import register_kernel

register_kernel("cast_to_static_shape", "numba")(cast_to_static_shape)
register_kernel("shape_elem_cnt", "numba")(shape_elem_cnt)
