"""NumPy float64 reference for the ported 1-D/2-D/3-D convolution tests: a channels-last N-d convolution (strides,
dilations, groups, TensorFlow's VALID/SAME or explicit pads) with its input and filter gradients, written from the
definition: one einsum per filter tap over the strided (dilated) view of the padded input."""

from __future__ import annotations

import itertools
import math

import numpy as np


def same_pads(size: int, k: int, s: int, d: int) -> tuple[int, int]:
    """TensorFlow's SAME (OneFlow's SAME_UPPER): the odd padding element after."""
    out = math.ceil(size / s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def conv_nd_channels_last(x, w, strides, dilations, padding, groups=1, dy=None):
    """x (N, *S, C), w (*K, C/groups, F) (TensorFlow's layouts); padding "VALID", "SAME" or [(lo, hi)] per spatial
    axis. Returns y and, with ``dy``, (dx, dw)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    nd = x.ndim - 2
    spatial, kernel = x.shape[1:-1], w.shape[:nd]
    if padding == "VALID":
        pads = [(0, 0)] * nd
    elif padding == "SAME":
        pads = [same_pads(spatial[i], kernel[i], strides[i], dilations[i]) for i in range(nd)]
    else:
        pads = [tuple(p) for p in padding]
    xp = np.pad(x, [(0, 0), *pads, (0, 0)])
    out = [(spatial[i] + sum(pads[i]) - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1 for i in range(nd)]
    cg, f = w.shape[-2], w.shape[-1]
    fg = f // groups
    y = np.zeros((x.shape[0], *out, f))
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    for tap in itertools.product(*[range(k) for k in kernel]):
        idx = tuple(slice(tap[i] * dilations[i], tap[i] * dilations[i] + strides[i] * (out[i] - 1) + 1, strides[i])
                    for i in range(nd))
        for g in range(groups):
            cs, fs = slice(g * cg, (g + 1) * cg), slice(g * fg, (g + 1) * fg)
            view = xp[(slice(None), *idx, cs)]
            y[..., fs] += np.einsum("...c,cf->...f", view, w[tap][:, fs])
            if dy is not None:
                dyg = dy.astype(np.float64)[..., fs]
                batch_axes = list(range(nd + 1))
                dw[tap][:, fs] += np.tensordot(view, dyg, axes=(batch_axes, batch_axes))
                dxp[(slice(None), *idx, cs)] += np.einsum("...f,cf->...c", dyg, w[tap][:, fs])
    if dy is None:
        return y
    crop = tuple(slice(pads[i][0], pads[i][0] + spatial[i]) for i in range(nd))
    return y, dxp[(slice(None), *crop, slice(None))], dw


def pool_nd_channels_first(x, k, s, padding, kind):
    """TensorFlow's avg/max pooling over the spatial axes of (N, C, *S) (VALID or SAME: padded cells are left out
    of the average and of the maximum) and the input gradient for a ones output gradient (the maximum's to the
    first maximum of its window), by looping over the windows."""
    x = x.astype(np.float64)
    nd = x.ndim - 2
    spatial = x.shape[2:]
    k, s = ([k] * nd if isinstance(k, int) else list(k)), ([s] * nd if isinstance(s, int) else list(s))
    if padding == "SAME":
        lo = [same_pads(spatial[i], k[i], s[i], 1)[0] for i in range(nd)]
        out = [math.ceil(spatial[i] / s[i]) for i in range(nd)]
    else:
        lo = [0] * nd
        out = [(spatial[i] - k[i]) // s[i] + 1 for i in range(nd)]
    y = np.empty((*x.shape[:2], *out))
    dx = np.zeros_like(x)
    for pos in itertools.product(*[range(o) for o in out]):
        win = tuple(slice(max(pos[i] * s[i] - lo[i], 0), min(pos[i] * s[i] - lo[i] + k[i], spatial[i]))
                    for i in range(nd))
        cells = x[(slice(None), slice(None), *win)].reshape(*x.shape[:2], -1)
        if kind == "AVG":
            y[(slice(None), slice(None), *pos)] = cells.mean(-1)
            dx[(slice(None), slice(None), *win)] += 1.0 / cells.shape[-1]
        else:
            y[(slice(None), slice(None), *pos)] = cells.max(-1)
            shape = tuple(w.stop - w.start for w in win)
            for b in range(x.shape[0]):
                for c in range(x.shape[1]):
                    at = np.unravel_index(int(cells[b, c].argmax()), shape)
                    dx[(b, c, *[win[i].start + at[i] for i in range(nd)])] += 1.0
    return y, dx
