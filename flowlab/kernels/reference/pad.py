"""NumPy reference kernels for the padding ops."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def _pad_factory(mode: str):  # noqa: ANN202
    def factory(ctx: KernelCtx) -> KernelFn:
        left, right, top, bottom = ctx.attrs["padding"]
        widths = ((0, 0), (0, 0), (top, bottom), (left, right))

        def kernel(ins, outs):  # noqa: ANN001, ANN202
            outs[0][...] = np.pad(ins[0], widths, mode=mode)

        return kernel

    return factory


register_kernel("reflection_pad2d", "reference")(_pad_factory("reflect"))
register_kernel("zero_pad2d", "reference")(_pad_factory("constant"))
