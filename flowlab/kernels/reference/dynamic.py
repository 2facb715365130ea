"""NumPy reference kernels of the dynamic-blob ops (ops/dynamic_ops2.py); the Numba tier runs the same code (they
move bytes and read shapes: nothing to compile)."""

from __future__ import annotations

import math
from typing import Any

from ..registry import KernelCtx, KernelFn, register_kernel


def included_axes(attrs: dict[str, Any], ndim: int) -> list[int]:
    """ops/dynamic_ops2.included_axes (kernels import no op module): ``include_axis`` minus ``exclude_axis``."""
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


register_kernel("cast_to_static_shape", "reference")(cast_to_static_shape)
register_kernel("shape_elem_cnt", "reference")(shape_elem_cnt)
