"""The dynamic-blob ops' CPU kernels (ops/dynamic_ops2.py) in the Numba tier: the reference's, which only move
bytes and read shapes."""

from __future__ import annotations

from ..reference.dynamic import argwhere, cast_to_static_shape, shape_elem_cnt, sync_dynamic_resize
from ..registry import register_kernel

for _name, _factory in (("cast_to_static_shape", cast_to_static_shape), ("shape_elem_cnt", shape_elem_cnt),
                        ("sync_dynamic_resize", sync_dynamic_resize), ("argwhere", argwhere)):
    register_kernel(_name, "numba")(_factory)
