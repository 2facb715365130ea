"""float16 on the GPU as on the CPU (registry._in_float32): the op's float32 kernel runs on float32 device buffers
made once; float16 inputs are widened into them on the stream before it, outputs narrowed after it, and the
elements of an input the kernel updates in place (an optimizer's variable and state, batch norm's moving
statistics) are written back where they changed."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ...ir import BlobDesc
from ...ir.dtype import float16, float32
from ..registry import KernelCtx, register_float16_wrapper
from ._cuda import cuda, current_launch, flat, launch1
from .elementwise import UNARY, map1


@cuda.jit
def _narrow_changed(wide, before, half):
    for i in range(cuda.grid(1), half.size, cuda.gridsize(1)):
        w, b = wide[i], before[i]
        if w != b and not (w != w and b != b):  # changed, and not NaN both times
            half[i] = w


def in_float32_gpu(factory: Callable[[KernelCtx], Callable], ctx: KernelCtx) -> Callable:
    def widen(d: BlobDesc) -> BlobDesc:
        return BlobDesc(d.shape, float32) if d.dtype == float16 else d

    kernel = factory(dataclasses.replace(ctx, in_descs=tuple(map(widen, ctx.in_descs)),
                                         out_descs=tuple(map(widen, ctx.out_descs))))
    copy, threads = map1(UNARY["copy"]), current_launch().threads
    half_in = [i for i, d in enumerate(ctx.in_descs) if d.dtype == float16]
    half_out = [i for i, d in enumerate(ctx.out_descs) if d.dtype == float16]
    wide_in = {i: cuda.device_array(ctx.in_descs[i].shape, np.float32) for i in half_in}
    before = {i: cuda.device_array(ctx.in_descs[i].shape, np.float32) for i in half_in}
    wide_out = {i: cuda.device_array(ctx.out_descs[i].shape, np.float32) for i in half_out}

    def run(ins, outs, stream=0):
        for i in half_in:
            n = ins[i].size
            launch1(copy, n, threads, stream, flat(ins[i]), flat(wide_in[i]), 0.0)
            launch1(copy, n, threads, stream, flat(ins[i]), flat(before[i]), 0.0)
        kernel([wide_in.get(i, x) for i, x in enumerate(ins)], [wide_out.get(i, y) for i, y in enumerate(outs)],
               stream)
        for i in half_out:
            launch1(copy, outs[i].size, threads, stream, flat(wide_out[i]), flat(outs[i]), 0.0)
        for i in half_in:
            launch1(_narrow_changed, ins[i].size, threads, stream, flat(wide_in[i]), flat(before[i]), flat(ins[i]))

    return run


register_float16_wrapper("gpu", in_float32_gpu)
