"""NumPy reference kernels of ops/creation_ops.py: range, reverse, tril and fused_scale_tril (tril_kernel.cpp:
out = x·scale where j <= i + diagonal, else the fill value, both cast to the blob's dtype)."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def range_values(ctx: KernelCtx) -> np.ndarray:
    a = ctx.attrs
    return np.arange(a["start"], a["limit"], a["delta"]).astype(ctx.out_descs[0].dtype.np)


def tril_params(ctx: KernelCtx) -> tuple[int, object, object]:
    """(diagonal, fill, scale) in the blob's dtype, each from its floating or integer attr as OneFlow picks."""
    dtype, a = ctx.in_descs[0].dtype.np, ctx.attrs
    fill = a["floating_fill_value"] if a["is_floating_fill_value"] else a["integer_fill_value"]
    scale = (a["floating_scale_value"] if a["is_floating_scale_value"] else a["integer_scale_value"]) \
        if "floating_scale_value" in a else 1
    return int(a["diagonal"]), np.array(fill).astype(dtype)[()], np.array(scale).astype(dtype)[()]


@register_kernel("range", "reference")
def _range(ctx: KernelCtx) -> KernelFn:
    values = range_values(ctx)

    def kernel(ins, outs):
        outs[0][...] = values

    return kernel


@register_kernel("reverse", "reference")
def _reverse(ctx: KernelCtx) -> KernelFn:
    axes = tuple(ctx.attrs["axis"])

    def kernel(ins, outs):
        outs[0][...] = np.flip(ins[0], axes)

    return kernel


def _tril(ctx: KernelCtx) -> KernelFn:
    diagonal, fill, scale = tril_params(ctx)
    m, n = ctx.in_descs[0].shape[-2:]
    keep = np.tril(np.ones((m, n), bool), k=diagonal)

    def kernel(ins, outs):
        with np.errstate(over="ignore"):
            outs[0][...] = np.where(keep, ins[0] * scale, fill)

    return kernel


register_kernel("tril", "reference")(_tril)
register_kernel("fused_scale_tril", "reference")(_tril)
