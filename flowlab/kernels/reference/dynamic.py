"""NumPy reference kernels of the dynamic-blob ops (ops/dynamic_ops.py); the Numba tier has its own
(numba_cpu/dynamic.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def included_axes(attrs: dict[str, Any], ndim: int) -> list[int]:
    """ops/dynamic_ops.included_axes (kernels import no op module): ``include_axis`` minus ``exclude_axis``."""
    include = attrs["include_axis"]
    axes = range(ndim) if include is None else [int(a) % ndim for a in include]
    exclude = {int(a) % ndim for a in attrs["exclude_axis"]}
    return sorted(a for a in set(axes) if a not in exclude)


def cast_to_static_shape(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):  # the current piece is the static blob's prefix (runtime/dynamic.py)
        outs[0].reshape(-1)[:ins[0].size] = ins[0].reshape(-1)

    return kernel


def shape_elem_cnt(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):  # the input's current shape (its header), never its data
        outs[0][0] = math.prod(ins[0].shape[a] for a in included_axes(ctx.attrs, ins[0].ndim))

    return kernel


def sync_dynamic_resize(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):  # the rows kept are a prefix: the header (runtime/dynamic.py) says how many
        outs[0].reshape(-1)[:ins[0].size] = ins[0].reshape(-1)

    return kernel


def argwhere(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        found = np.argwhere(ins[0])
        outs[0][:len(found)] = found
        outs[1][0] = len(found)

    return kernel


for _name, _factory in (("cast_to_static_shape", cast_to_static_shape), ("shape_elem_cnt", shape_elem_cnt),
                        ("sync_dynamic_resize", sync_dynamic_resize), ("argwhere", argwhere)):
    register_kernel(_name, "reference")(_factory)
