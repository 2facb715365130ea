"""NumPy reference kernels for the padding ops."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def _pad_factory(mode: str):
    def factory(ctx: KernelCtx) -> KernelFn:
        left, right, top, bottom = ctx.attrs["padding"]
        widths = ((0, 0), (0, 0), (top, bottom), (left, right))

        def kernel(ins, outs):
            outs[0][...] = np.pad(ins[0], widths, mode=mode)

        return kernel

    return factory


register_kernel("reflection_pad2d", "reference")(_pad_factory("reflect"))
register_kernel("zero_pad2d", "reference")(_pad_factory("constant"))


def _pad_grad_factory(reflect: bool):
    def factory(ctx: KernelCtx) -> KernelFn:
        left, right, top, bottom = ctx.attrs["padding"]

        def kernel(ins, outs):
            dy, dx = ins[0], outs[0]
            h, w = dx.shape[2], dx.shape[3]
            if not reflect:
                dx[...] = dy[:, :, top:top + h, left:left + w]
                return
            dx[...] = 0
            rows = [_reflect(i - top, h) for i in range(dy.shape[2])]
            cols = [_reflect(j - left, w) for j in range(dy.shape[3])]
            for i, si in enumerate(rows):  # scatter-add every output cell back to the input cell it copied
                np.add.at(dx[:, :, si, :], (slice(None), slice(None), cols), dy[:, :, i, :])

        return kernel

    return factory


def _reflect(i: int, n: int) -> int:
    return -i if i < 0 else (2 * (n - 1) - i if i >= n else i)


register_kernel("reflection_pad2d_grad", "reference")(_pad_grad_factory(True))
register_kernel("zero_pad2d_grad", "reference")(_pad_grad_factory(False))
