"""NumPy float64 references for the ported convolution tests: NHWC conv2d (TensorFlow's VALID/SAME padding, strides,
groups) with its input and filter gradients, written from the definition (a patch view and einsum)."""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    out = math.ceil(size / s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def conv2d_nhwc(x: np.ndarray, w: np.ndarray, stride: int, padding: str, groups: int, dy: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """y = conv(x, w) for x (N, H, W, C) and w (kh, kw, C/groups, F) (TensorFlow's layouts); with ``dy`` also dx, dw."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, h, wd, c = x.shape
    kh, kw, cg, f = w.shape
    if padding == "SAME":
        (pt, pb), (pl, pr) = _same_pads(h, kh, stride), _same_pads(wd, kw, stride)
    else:
        pt = pb = pl = pr = 0
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    patches = sliding_window_view(xp, (kh, kw), axis=(1, 2))[:, ::stride, ::stride]  # N, Ho, Wo, C, kh, kw
    ho, wo = patches.shape[1:3]
    fg = f // groups
    y = np.empty((n, ho, wo, f))
    for g in range(groups):
        pg = patches[:, :, :, g * cg:(g + 1) * cg]
        y[..., g * fg:(g + 1) * fg] = np.einsum("nhwcij,ijcf->nhwf", pg, w[..., g * fg:(g + 1) * fg])
    if dy is None:
        return y, None, None
    dy = dy.astype(np.float64)
    dw = np.empty_like(w)
    dxp = np.zeros_like(xp)
    for g in range(groups):
        pg = patches[:, :, :, g * cg:(g + 1) * cg]
        dyg = dy[..., g * fg:(g + 1) * fg]
        dw[..., g * fg:(g + 1) * fg] = np.einsum("nhwcij,nhwf->ijcf", pg, dyg)
        dpatch = np.einsum("ijcf,nhwf->nhwijc", w[..., g * fg:(g + 1) * fg], dyg)
        for i in range(kh):
            for j in range(kw):
                dxp[:, i:i + stride * ho:stride, j:j + stride * wo:stride, g * cg:(g + 1) * cg] += dpatch[:, :, :, i, j]
    return y, dxp[:, pt:pt + h, pl:pl + wd], dw


def pool2d_nchw(x: np.ndarray, k: int, s: int, padding: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """TensorFlow's avg_pool2d / max_pool2d on NCHW (SAME: padded cells are left out of the average and of the max)
    and the input gradient for a ones output gradient, by looping over the windows."""
    x = x.astype(np.float64)
    n, c, h, w = x.shape
    if padding == "SAME":
        (pt, _), (pl, _) = _same_pads(h, k, s), _same_pads(w, k, s)
        ho, wo = math.ceil(h / s), math.ceil(w / s)
    else:
        pt = pl = 0
        ho, wo = (h - k) // s + 1, (w - k) // s + 1
    y = np.empty((n, c, ho, wo))
    dx = np.zeros_like(x)
    for i in range(ho):
        for j in range(wo):
            r0, c0 = max(i * s - pt, 0), max(j * s - pl, 0)
            r1, c1 = min(i * s - pt + k, h), min(j * s - pl + k, w)
            win = x[:, :, r0:r1, c0:c1].reshape(n, c, -1)
            if kind == "AVG":
                y[:, :, i, j] = win.mean(-1)
                dx[:, :, r0:r1, c0:c1] += 1.0 / win.shape[-1]
            else:
                y[:, :, i, j] = win.max(-1)
                arg = win.argmax(-1)
                for b in range(n):
                    for ch in range(c):
                        rr, cc = divmod(int(arg[b, ch]), c1 - c0)
                        dx[b, ch, r0 + rr, c0 + cc] += 1.0
    return y, dx
