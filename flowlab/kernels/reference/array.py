"""NumPy reference kernels: reshape, transpose, concat, split_like, identity, cast, constant, *_like."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


@register_kernel("reshape", "reference")
@register_kernel("identity", "reference")
def _copy_reshaped(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        outs[0][...] = ins[0].reshape(outs[0].shape)

    return kernel


@register_kernel("transpose", "reference")
def _transpose(ctx: KernelCtx) -> KernelFn:
    perm = ctx.attrs["perm"]

    def kernel(ins, outs):
        outs[0][...] = np.transpose(ins[0], perm)

    return kernel


@register_kernel("concat", "reference")
def _concat(ctx: KernelCtx) -> KernelFn:
    axis = ctx.attrs["axis"]

    def kernel(ins, outs):
        outs[0][...] = np.concatenate(ins, axis=axis)

    return kernel


@register_kernel("split_like", "reference")
def _split_like(ctx: KernelCtx) -> KernelFn:
    axis = ctx.attrs["axis"] % len(ctx.in_descs[0].shape)
    bounds = np.cumsum([d.shape[axis] for d in ctx.out_descs])[:-1]

    def kernel(ins, outs):
        for part, out in zip(np.split(ins[0], bounds, axis=axis), outs):
            out[...] = part

    return kernel


@register_kernel("cast", "reference")
def _cast(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        outs[0][...] = ins[0].astype(outs[0].dtype)

    return kernel


def _fill(value_of):
    def factory(ctx: KernelCtx) -> KernelFn:
        value = value_of(ctx)

        def kernel(ins, outs):
            outs[0].fill(value)

        return kernel

    return factory


register_kernel("constant", "reference")(_fill(lambda ctx: ctx.attrs["value"]))
register_kernel("zeros_like", "reference")(_fill(lambda ctx: 0))
register_kernel("ones_like", "reference")(_fill(lambda ctx: 1))
