"""NumPy reference kernels: conv2d (im2col by precomputed indices), pooling, dropout, and their gradients.

The output size of a window op is computed in one place, ops/cnn_ops.py's ``out_size``, when the op is inferred;
the kernels (these and the Numba ones) take it from the blob descs rather than computing it again."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def conv_geometry(ctx: KernelCtx, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                  out_hw: tuple[int, ...]) -> dict:
    """Indices of every (channel, ki, kj) x (output position) into one padded, flattened input plane stack;
    ``out_hw``: the output's (or dy's) spatial shape, as inferred."""
    n, c, h, w = x_shape
    _o, _cg, kh, kw = w_shape
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = ctx.attrs["strides"], ctx.attrs["dilations"], ctx.attrs["pads"]
    hp, wp = h + pt + pb, w + pl + pr
    oh, ow = out_hw
    ci, ki, kj = np.meshgrid(np.arange(c), np.arange(kh), np.arange(kw), indexing="ij")
    oi, oj = np.meshgrid(np.arange(oh), np.arange(ow), indexing="ij")
    rows = (ci * hp * wp + ki * dh * wp + kj * dw).reshape(-1, 1)
    cols = (oi * sh * wp + oj * sw).reshape(1, -1)
    return {"idx": (rows + cols).astype(np.int64), "padded": (n, c, hp, wp), "out_hw": (oh, ow),
            "pads": (pt, pb, pl, pr), "groups": ctx.attrs["groups"]}


def _pad(x: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    pt, pb, pl, pr = pads
    return np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))


def _crop(xp: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    pt, pb, pl, pr = pads
    return xp[:, :, pt:xp.shape[2] - pb, pl:xp.shape[3] - pr]


@register_kernel("conv2d", "reference")
def _conv(ctx: KernelCtx) -> KernelFn:
    geo = conv_geometry(ctx, ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.out_descs[0].shape[2:])
    g = geo["groups"]

    def kernel(ins, outs):
        x, w = ins
        n, o = x.shape[0], w.shape[0]
        cols = _pad(x, geo["pads"]).reshape(n, -1)[:, geo["idx"]]  # (n, c*kh*kw, p)
        kg, og = cols.shape[1] // g, o // g
        out = outs[0].reshape(n, o, -1)
        for gi in range(g):
            wg = w[gi * og:(gi + 1) * og].reshape(og, -1)
            out[:, gi * og:(gi + 1) * og] = np.einsum("ok,nkp->nop", wg, cols[:, gi * kg:(gi + 1) * kg])

    return kernel


@register_kernel("conv2d_data_grad", "reference")
def _conv_data_grad(ctx: KernelCtx) -> KernelFn:
    geo = conv_geometry(ctx, ctx.in_descs[2].shape, ctx.in_descs[1].shape, ctx.in_descs[0].shape[2:])
    g = geo["groups"]

    def kernel(ins, outs):
        dy, w, _like = ins
        n, o = dy.shape[0], w.shape[0]
        og = o // g
        dy3 = dy.reshape(n, o, -1)
        dcols = np.concatenate([np.einsum("ok,nop->nkp", w[gi * og:(gi + 1) * og].reshape(og, -1),
                                          dy3[:, gi * og:(gi + 1) * og]) for gi in range(g)], axis=1)
        dxp = np.zeros((n, int(np.prod(geo["padded"][1:]))), dy.dtype)
        np.add.at(dxp, (np.arange(n)[:, None, None], geo["idx"][None]), dcols)
        outs[0][...] = _crop(dxp.reshape(geo["padded"]), geo["pads"])

    return kernel


@register_kernel("conv2d_filter_grad", "reference")
def _conv_filter_grad(ctx: KernelCtx) -> KernelFn:
    geo = conv_geometry(ctx, ctx.in_descs[1].shape, ctx.in_descs[2].shape, ctx.in_descs[0].shape[2:])
    g = geo["groups"]

    def kernel(ins, outs):
        dy, x, _like = ins
        n, o = dy.shape[0], dy.shape[1]
        cols = _pad(x, geo["pads"]).reshape(n, -1)[:, geo["idx"]]
        kg, og = cols.shape[1] // g, o // g
        dy3 = dy.reshape(n, o, -1)
        dw = outs[0].reshape(o, -1)
        for gi in range(g):
            dw[gi * og:(gi + 1) * og] = np.einsum("nop,nkp->ok", dy3[:, gi * og:(gi + 1) * og],
                                                  cols[:, gi * kg:(gi + 1) * kg])

    return kernel


def pool_geometry(ctx: KernelCtx, shape: tuple[int, ...], out_hw: tuple[int, ...]) -> dict:
    n, c, h, w = shape
    (kh, kw), (sh, sw), (pt, pb, pl, pr) = ctx.attrs["ksize"], ctx.attrs["strides"], ctx.attrs["pads"]
    hp, wp = h + pt + pb, w + pl + pr
    oh, ow = out_hw
    ki, kj = np.meshgrid(np.arange(kh), np.arange(kw), indexing="ij")
    oi, oj = np.meshgrid(np.arange(oh), np.arange(ow), indexing="ij")
    idx = (ki * wp + kj).reshape(-1, 1) + (oi * sh * wp + oj * sw).reshape(1, -1)
    valid = np.pad(np.ones((h, w)), ((pt, pb), (pl, pr))).reshape(-1)[idx]  # 1 where the window is inside x
    return {"idx": idx, "valid": valid, "padded": (n * c, hp * wp), "pads": (pt, pb, pl, pr),
            "count": valid.sum(0), "planes": (n, c, hp, wp)}


@register_kernel("max_pool2d", "reference")
def _max_pool(ctx: KernelCtx) -> KernelFn:
    geo = pool_geometry(ctx, ctx.in_descs[0].shape, ctx.out_descs[0].shape[2:])

    def kernel(ins, outs):
        windows = _pad(ins[0], geo["pads"]).reshape(geo["padded"])[:, geo["idx"]]
        windows = np.where(geo["valid"] > 0, windows, -np.inf)
        outs[0][...] = windows.max(axis=1).reshape(outs[0].shape)

    return kernel


@register_kernel("avg_pool2d", "reference")
def _avg_pool(ctx: KernelCtx) -> KernelFn:
    geo = pool_geometry(ctx, ctx.in_descs[0].shape, ctx.out_descs[0].shape[2:])

    def kernel(ins, outs):
        windows = _pad(ins[0], geo["pads"]).reshape(geo["padded"])[:, geo["idx"]]
        outs[0][...] = (windows.sum(axis=1) / geo["count"]).reshape(outs[0].shape)

    return kernel


@register_kernel("max_pool2d_grad", "reference")
def _max_pool_grad(ctx: KernelCtx) -> KernelFn:
    geo = pool_geometry(ctx, ctx.in_descs[0].shape, ctx.in_descs[2].shape[2:])

    def kernel(ins, outs):
        x, _y, dy = ins
        windows = _pad(x, geo["pads"]).reshape(geo["padded"])[:, geo["idx"]]
        valid = geo["valid"] > 0
        windows = np.where(valid, windows, -np.inf)
        top = windows.max(axis=1, keepdims=True)
        # (planes, p): the first maximum inside x takes the gradient (a first NaN, as np.argmax), also when the
        # maximum is -inf, which padding ties with
        first_max = (((windows == top) | np.isnan(windows)) & valid).argmax(axis=1)
        pos = geo["idx"][first_max, np.arange(geo["idx"].shape[1])]
        dxp = np.zeros(geo["padded"], dy.dtype)
        np.add.at(dxp, (np.arange(geo["padded"][0])[:, None], pos), dy.reshape(geo["padded"][0], -1))
        outs[0][...] = _crop(dxp.reshape(geo["planes"]), geo["pads"])

    return kernel


@register_kernel("avg_pool2d_grad", "reference")
def _avg_pool_grad(ctx: KernelCtx) -> KernelFn:
    geo = pool_geometry(ctx, ctx.in_descs[0].shape, ctx.in_descs[2].shape[2:])

    def kernel(ins, outs):
        dy = ins[2].reshape(geo["padded"][0], 1, -1) / geo["count"]
        share = dy * geo["valid"]  # (planes, k, p)
        dxp = np.zeros(geo["padded"], dy.dtype)
        np.add.at(dxp, (np.arange(geo["padded"][0])[:, None, None], geo["idx"][None]), share)
        outs[0][...] = _crop(dxp.reshape(geo["planes"]), geo["pads"])

    return kernel


def dropout_stream(ctx: KernelCtx) -> np.random.Generator:
    """The op's seeded stream of uniform numbers: both kernel modes draw the same masks from it."""
    return np.random.Generator(np.random.PCG64(ctx.attrs["seed"]))


@register_kernel("dropout", "reference")
def _dropout(ctx: KernelCtx) -> KernelFn:
    rate, rng = ctx.attrs["rate"], dropout_stream(ctx)
    scale = 1.0 / (1.0 - rate)

    def kernel(ins, outs):
        mask = outs[1]
        mask[...] = (rng.random(mask.shape) >= rate) * scale  # a new mask each run, from the seeded stream
        np.multiply(ins[0], mask, out=outs[0])

    return kernel


@register_kernel("dropout_grad", "reference")
def _dropout_grad(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        np.multiply(ins[0], ins[1], out=outs[0])

    return kernel
