"""The Numba CUDA kernel of ``deconv2d`` (ops/conv_nd_ops.py, flow.nn.conv2d_transpose): conv2d's input-gradient
kernel with the deconvolution's input as its dy and its output as its dx (the ``like`` blob it would read the
shape from is the output itself)."""

from __future__ import annotations

import dataclasses

from ..registry import KernelCtx, get_kernel_factory, register_kernel


@register_kernel("deconv2d", "numba", "gpu")
def _deconv2d(ctx: KernelCtx):
    x, w = ctx.in_descs
    factory = get_kernel_factory("conv2d_data_grad", "numba", "gpu")
    inner = factory(dataclasses.replace(ctx, in_descs=(x, w, ctx.out_descs[0])))

    def kernel(ins, outs, *stream):
        inner([ins[0], ins[1], outs[0]], outs, *stream)

    return kernel
