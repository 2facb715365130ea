"""The conv2d kernels' factories: Winograd's algorithm (winograd.py) where it does fewer multiplications and was
measured faster, else im2col and a GEMM (conv.py), the reference algorithm.

Winograd is taken for a stride-1, undilated, ungrouped conv with a square 3x3 or 5x5 filter whose channel counts
(both sides) are at least ``MIN_CHANNELS`` and whose tiles do at most ``MAX_PRODUCTS`` of im2col's products (a
small output wastes most of a 4x4 tile). Its transforms are vectorized over the tiles and channels, linear in
the channel counts, while its GEMMs grow with their product, so few channels lose. Measured (thread CPU,
Winograd / im2col time of the forward, data and filter gradients): 16 -> 16 channels, 3x3 on 9x9: 1.68, 1.09,
1.53; on 4x4: 0.98, 1.06, 0.88; outputs of 1x1: 2.3-4.4; 16 -> 16, 5x5 on 14x14: 0.87, 0.63, 0.72; 32 -> 32, 3x3
on 28x28: 0.78, 0.73, 0.74; 64 -> 64, 3x3 on 8x8: 0.66, 0.58, 0.58, 5x5 on 6x6: 0.62, 0.60, 0.59; LeNet's conv2
(5x5, 32 -> 64, 14x14, batch 100): 0.55, 0.49, 0.56. conv1 (one input channel) stays on im2col.

The conv chains (chains.py) match the im2col kernels only, so they yield to Winograd: conv2's bias, relu and
pool run as their own kernels (the chains took 1-4 % off conv2's ops; Winograd about 40 ms off the step). The
choice is made once per task when its kernel is built; ``FLOWLAB_WINOGRAD=0`` keeps every conv on im2col. A
Winograd kernel whose result holds a NaN or an Inf runs the im2col kernel over it (winograd.py says why), so
non-finite values reach the outputs they reach there.
"""

from __future__ import annotations

import numpy as np

from ...flags import get
from ..registry import FusedCall, Kernel, KernelCtx, KernelFn, Owned, fusable, register_kernel
from . import conv
from ._numba import njit
from .winograd import Winograd, _filter_transform, tile_for, winograd_core, winograd_filter_core

MIN_CHANNELS = 32
MAX_PRODUCTS = 0.4  # Winograd's a*a products a tile against im2col's r*r an output: 0.21-0.25 on whole tiles


def winograd_enabled() -> bool:
    return get("winograd")


def plan_for(ctx: KernelCtx, x_shape: tuple[int, ...], w_shape: tuple[int, ...], y_hw: tuple[int, ...]) -> bool:
    """Whether this conv (input x_shape, filter w_shape, output planes y_hw) runs Winograd's algorithm."""
    (sh, sw), (dh, dw) = ctx.attrs["strides"], ctx.attrs["dilations"]
    o, cg, kh, kw = w_shape
    if not (winograd_enabled() and (sh, sw, dh, dw) == (1, 1, 1, 1) and ctx.attrs["groups"] == 1 and kh == kw
            and kh in (3, 5) and min(o, cg) >= MIN_CHANNELS and len(x_shape) == 4
            and ctx.in_descs[0].dtype.np in (np.float32, np.float64)
            and all(0 <= p < kh for p in ctx.attrs["pads"])):  # the data gradient pads dy by r - 1 - pad
        return False
    m = tile_for(kh)
    a, tiles = m + kh - 1, -(-y_hw[0] // m) * -(-y_hw[1] // m)
    return a * a * tiles <= MAX_PRODUCTS * kh * kh * y_hw[0] * y_hw[1]


@njit
def _wino_fwd(x, w, y, g, bi, bc, ai, ac, gi, gc, src, xq, d, tmp, v, mm, yt, u, xp, cols, cg):
    _filter_transform(w, g, False, gi, gc, src, tmp, u)
    if winograd_core(x, u, y, g, bi, bc, ai, ac, xq, d, tmp, v, mm, yt):
        conv._conv_fwd(x, w, y, xp, cols, cg)  # a NaN or Inf: the im2col result stands


@njit
def _wino_data_grad(dy, w, dx, g, bi, bc, ai, ac, gi, gc, src, xq, d, tmp, v, mm, yt, u, xp, cols, cg):
    """dx: dy's full correlation with the flipped filter, channels swapped (g: dy is the core's input)."""
    _filter_transform(w, g, True, gi, gc, src, tmp, u)
    if winograd_core(dy, u, dx, g, bi, bc, ai, ac, xq, d, tmp, v, mm, yt):
        conv._conv_data_grad(dy, w, dx, xp, cols, cg)


@njit
def _wino_filter_grad(dy, x, dw, g, bi, bc, ami, amc, gti, gtc, xq, dq, d, tmp, v, e, p, src, xp, cols, cg):
    if winograd_filter_core(dy, x, dw, g, bi, bc, ami, amc, gti, gtc, xq, dq, d, tmp, v, e, p, src):
        conv._conv_filter_grad(dy, x, dw, xp, cols, cg)


def _kernel(fn: object, owned: tuple[np.ndarray, ...], plan: Winograd) -> Kernel:
    """fn(in0, in1, out0, *owned) on the flat registers, and its fused form (owned as Owned arrays); the kernel
    carries its plan (``Kernel.info``) for the benchmark."""
    def args(ins, outs) -> tuple:
        return ins[0].reshape(-1), ins[1].reshape(-1), outs[0].reshape(-1)

    def kernel(ins, outs):
        fn(*args(ins, outs), *owned)  # type: ignore[operator]

    return fusable(kernel, lambda ins, outs: FusedCall(fn, (*args(ins, outs), *(Owned(a) for a in owned))), plan)


def _im2col(c: conv._Conv) -> tuple[np.ndarray, ...]:
    return c.xp, c.cols, c.geo


@register_kernel("conv2d", "numba")
def _conv(ctx: KernelCtx) -> KernelFn:
    x_shape, w_shape, y_shape = ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.out_descs[0].shape
    c = conv._Conv(ctx, x_shape, w_shape, y_shape[2:])
    if not plan_for(ctx, x_shape, w_shape, y_shape[2:]):
        return conv._conv_kernel(conv._conv_fwd, c)
    n, ci, h, w = x_shape
    pt, _, pl, _ = ctx.attrs["pads"]
    p = Winograd(n, ci, h, w, w_shape[0], y_shape[2], y_shape[3], pt, pl, w_shape[2], ctx.in_descs[0].dtype.np)
    return _kernel(_wino_fwd, (p.geo, *p.b, *p.a, *p.g, p.src, p.xq, p.d, p.tmp, p.v, p.mm, p.yt, p.u, *_im2col(c)), p)


@register_kernel("conv2d_data_grad", "numba")
def _data_grad(ctx: KernelCtx) -> KernelFn:
    dy_shape, w_shape, x_shape = ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.in_descs[2].shape
    c = conv._Conv(ctx, x_shape, w_shape, dy_shape[2:])
    if not plan_for(ctx, x_shape, w_shape, dy_shape[2:]):
        return conv._conv_kernel(conv._conv_data_grad, c)
    n, ci, h, w = x_shape
    r = w_shape[2]
    pt, _, pl, _ = ctx.attrs["pads"]
    # the core's input is dy (O channels), its output dx: padded by r - 1 - pad, the filter flipped
    p = Winograd(n, w_shape[0], dy_shape[2], dy_shape[3], ci, h, w, r - 1 - pt, r - 1 - pl, r,
                 ctx.in_descs[0].dtype.np)
    return _kernel(_wino_data_grad, (p.geo, *p.b, *p.a, *p.g, p.src, p.xq, p.d, p.tmp, p.v, p.mm, p.yt, p.u,
                                     *_im2col(c)), p)


@register_kernel("conv2d_filter_grad", "numba")
def _filter_grad(ctx: KernelCtx) -> KernelFn:
    dy_shape, x_shape, w_shape = ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.in_descs[2].shape
    c = conv._Conv(ctx, x_shape, w_shape, dy_shape[2:])
    if not plan_for(ctx, x_shape, w_shape, dy_shape[2:]):
        return conv._conv_kernel(conv._conv_filter_grad, c)
    n, ci, h, w = x_shape
    pt, _, pl, _ = ctx.attrs["pads"]
    p = Winograd(n, ci, h, w, w_shape[0], dy_shape[2], dy_shape[3], pt, pl, w_shape[2], ctx.in_descs[0].dtype.np)
    return _kernel(_wino_filter_grad, (p.geo, *p.b, *p.am, *p.gt, p.xq, p.dq, p.d, p.tmp, p.v, p.mm, p.u, p.src,
                                       *_im2col(c)), p)
