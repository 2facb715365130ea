"""Numba CPU kernels for the update ops (SGD, momentum, Adam, RMSProp) and global-norm clipping: one pass over
the variable, no temporaries. They mirror kernels/reference/optimizer.py expression by expression."""

from __future__ import annotations

import math

import numpy as np

from ..registry import FusedCall, KernelCtx, KernelFn, fusable, register_kernel
from ._numba import njit
from .nn import first_out_of_range


@njit
def _sgd(w, diff, lr, scale, l1, l2, wd):
    w, diff = w.ravel(), diff.ravel()
    for i in range(w.size):
        g = diff[i] * scale
        if l1 != 0.0:  # a zero coefficient adds nothing, not 0 * inf = NaN (as the reference)
            g += l1 * np.sign(w[i])
        if l2 != 0.0:
            g += l2 * w[i]
        if wd != 0.0:
            w[i] -= lr * wd * w[i]
        w[i] -= lr * g


@njit
def _momentum(w, diff, v, lr, beta, scale, l1, l2, wd):
    w, diff, v = w.ravel(), diff.ravel(), v.ravel()
    for i in range(w.size):
        g = diff[i] * scale
        if l1 != 0.0:  # a zero coefficient adds nothing, not 0 * inf = NaN (as the reference)
            g += l1 * np.sign(w[i])
        if l2 != 0.0:
            g += l2 * w[i]
        wv = w[i]
        v[i] = beta * v[i] - lr * g  # OneFlow's MomentumUpdateFunctor: the decay is not in the momentum
        w[i] = wv + v[i]
        if wd != 0.0:  # a zero decay adds nothing, not 0 * inf = NaN
            w[i] -= lr * wd * wv


@njit
def _sgd_lr(w, diff, lr, scale, l1, l2, wd):
    _sgd(w, diff, lr[0], scale, l1, l2, wd)  # lr: the learning-rate blob, read when the act runs


@njit
def _momentum_lr(w, diff, v, lr, beta, scale, l1, l2, wd):
    _momentum(w, diff, v, lr[0], beta, scale, l1, l2, wd)


def _scalars(ctx: KernelCtx) -> tuple:
    cast = ctx.in_descs[0].dtype.np.type  # the variable's dtype: one signature per dtype
    return tuple(cast(ctx.attrs[k]) for k in ("scale", "l1", "l2", "weight_decay"))


@register_kernel("sgd_update", "numba")
def _sgd_f(ctx: KernelCtx) -> KernelFn:
    scale, l1, l2, wd = _scalars(ctx)
    cast = ctx.in_descs[0].dtype.np.type
    def kernel(ins, outs):
        _sgd(ins[0], ins[1], cast(ins[2][0]), scale, l1, l2, wd)

    if ctx.in_descs[2].dtype != ctx.in_descs[0].dtype:
        return kernel
    return fusable(kernel, lambda ins, outs: FusedCall(_sgd_lr, (ins[0], ins[1], ins[2], scale, l1, l2, wd)))


@register_kernel("momentum_update", "numba")
def _momentum_f(ctx: KernelCtx) -> KernelFn:
    scale, l1, l2, wd = _scalars(ctx)
    cast = ctx.in_descs[0].dtype.np.type
    beta = cast(ctx.attrs["beta"])
    def kernel(ins, outs):
        _momentum(ins[0], ins[1], ins[2], cast(ins[3][0]), beta, scale, l1, l2, wd)

    if ctx.in_descs[3].dtype != ctx.in_descs[0].dtype:
        return kernel
    return fusable(kernel, lambda ins, outs: FusedCall(_momentum_lr, (ins[0], ins[1], ins[2], ins[3], beta, scale, l1,
                                                                      l2, wd)))


@njit
def _grad_at(w, diff, i, scale, l1, l2):
    # the update ops' fused prologue, as kernels/reference/optimizer.effective_grad (zero terms not added)
    g = diff[i] * scale
    if l1 != 0.0:
        g += l1 * np.sign(w[i])
    if l2 != 0.0:
        g += l2 * w[i]
    return g


@njit
def _adam(w, diff, m, v, lr, scale, l1, l2, wd, b1, b2, eps):
    w, diff, m, v = w.ravel(), diff.ravel(), m.ravel(), v.ravel()
    for i in range(w.size):
        g = _grad_at(w, diff, i, scale, l1, l2)
        m[i] = b1 * m[i] + (1 - b1) * g
        v[i] = b2 * v[i] + (1 - b2) * g * g
        w[i] -= lr * (m[i] / (np.sqrt(v[i]) + eps) + wd * w[i])


@njit
def _rmsprop(w, diff, ms, lr, scale, l1, l2, wd, decay, eps):
    # wd: taken and unused, as OneFlow's RmsPropUpdateFunctor (it applies no weight decay)
    w, diff, ms = w.ravel(), diff.ravel(), ms.ravel()
    for i in range(w.size):
        g = _grad_at(w, diff, i, scale, l1, l2)
        ms[i] = decay * ms[i] + (1 - decay) * g * g
        w[i] -= lr * g / np.sqrt(ms[i] + eps)


@njit
def _rmsprop_centered(w, diff, ms, mg, lr, scale, l1, l2, wd, decay, eps):
    w, diff, ms, mg = w.ravel(), diff.ravel(), ms.ravel(), mg.ravel()
    for i in range(w.size):
        g = _grad_at(w, diff, i, scale, l1, l2)
        ms[i] = decay * ms[i] + (1 - decay) * g * g
        mg[i] = decay * mg[i] + (1 - decay) * g
        w[i] -= lr * g / np.sqrt(ms[i] - mg[i] * mg[i] + eps)


@njit
def _indexed_slices_adam(w, ids, values, m, v, lr, scale, wd, b1, b2, eps, lower, logical):
    # w, m, v (rows, feat): rows [lower, lower + rows) of a ``logical``-row table; ids (k,); values (k, feat).
    # Equal ids are summed first (sorted, so each group is a run); rows no id names, and other devices' rows,
    # are not touched.
    bad = first_out_of_range(ids, logical)
    if bad >= 0:
        return bad
    order = np.argsort(ids, kind="mergesort")
    g = np.empty(w.shape[1], w.dtype)
    start = 0
    while start < ids.size:
        row = ids[order[start]] - lower
        if row < 0 or row >= w.shape[0]:
            end = start
            while end < ids.size and ids[order[end]] == ids[order[start]]:
                end += 1
            start = end
            continue
        g[:] = 0
        end = start
        while end < ids.size and ids[order[end]] - lower == row:
            for j in range(w.shape[1]):
                g[j] += values[order[end], j] * scale
            end += 1
        for j in range(w.shape[1]):
            m[row, j] = b1 * m[row, j] + (1 - b1) * g[j]
            v[row, j] = b2 * v[row, j] + (1 - b2) * g[j] * g[j]
            w[row, j] -= lr * (m[row, j] / (np.sqrt(v[row, j]) + eps) + wd * w[row, j])
        start = end
    return -1


@njit
def _grouped(ids, values, scale, lower, rows, logical):
    # (bad, local rows, their summed scaled values): equal ids summed, other devices' rows left out
    bad = first_out_of_range(ids, logical)
    order = np.argsort(ids, kind="mergesort")
    out_rows = np.empty(ids.size, np.int64)
    g = np.zeros((ids.size, values.shape[1]), values.dtype)
    n = 0
    k = 0
    while bad < 0 and k < ids.size:
        row = ids[order[k]] - lower
        end = k
        while end < ids.size and ids[order[end]] - lower == row:
            if 0 <= row < rows:
                for j in range(values.shape[1]):
                    g[n, j] += values[order[end], j] * scale
            end += 1
        if 0 <= row < rows:
            out_rows[n] = row
            n += 1
        k = end
    return bad, out_rows[:n], g[:n]


@njit
def _indexed_sgd(w, rows, g, lr, wd, mom, beta, momentum):
    for r in range(rows.size):
        for j in range(w.shape[1]):
            i = rows[r]
            if momentum:  # MomentumUpdateFunctor: the decay is not in the momentum
                mom[i, j] = beta * mom[i, j] - lr * g[r, j]
                w[i, j] += mom[i, j] - lr * wd * w[i, j]
            else:  # SGDUpdateFunctor
                w[i, j] -= lr * (g[r, j] + wd * w[i, j])


def _indexed_sgd_factory(momentum: bool):
    def factory(ctx: KernelCtx) -> KernelFn:
        from ..checks import raise_out_of_range
        from ..reference.optimizer import table_rows

        a, shape = ctx.attrs, ctx.in_descs[0].shape
        lower, rows, logical = table_rows(ctx)
        scale, wd, beta = float(a["scale"]), float(a["weight_decay"]), float(a.get("beta", 0.0))

        def kernel(ins, outs):
            ids = ins[1].reshape(-1)
            bad, local, g = _grouped(ids, ins[2].reshape(ids.size, -1), scale, lower, rows, logical)
            raise_out_of_range(ids, bad, logical, "index", 0, "model", (logical, *shape[1:]))
            w = ins[0].reshape(rows, -1)
            mom = ins[4].reshape(rows, -1) if momentum else w
            _indexed_sgd(w, local, g, float(ins[3][0]), wd, mom, beta, momentum)

        return kernel

    return factory


register_kernel("indexed_slices_sgd_update", "numba")(_indexed_sgd_factory(False))
register_kernel("indexed_slices_momentum_update", "numba")(_indexed_sgd_factory(True))


@register_kernel("indexed_slices_adam_update", "numba")
def _indexed_slices_adam_f(ctx: KernelCtx) -> KernelFn:
    from ..checks import raise_out_of_range
    from ..reference.optimizer import bias_corrected_lr, table_rows

    a = ctx.attrs
    scale, wd, b1, b2, eps = (float(a[k]) for k in ("scale", "weight_decay", "beta1", "beta2", "epsilon"))
    shape = ctx.in_descs[0].shape
    lower, _rows, logical = table_rows(ctx)

    def kernel(ins, outs):
        lr = float(ins[3][0])
        if a["do_bias_correction"]:
            lr = bias_corrected_lr(lr, int(ins[6][0]), a["beta1"], a["beta2"])
        ids = ins[1].reshape(-1)
        rows = shape[0]
        bad = _indexed_slices_adam(ins[0].reshape(rows, -1), ids, ins[2].reshape(ids.size, -1),
                                   ins[4].reshape(rows, -1), ins[5].reshape(rows, -1), lr, scale, wd, b1, b2, eps,
                                   lower, logical)
        raise_out_of_range(ids, bad, logical, "index", 0, "model", (logical, *shape[1:]))

    return kernel


@njit
def _lamb(w, diff, m, v, b1t, b2t, adam, lr, scale, l1, l2, wd, b1, b2, eps):
    w, diff, m, v, adam = w.ravel(), diff.ravel(), m.ravel(), v.ravel(), adam.ravel()
    b1t[0] *= b1  # OneFlow advances beta^t before using it (kernels/reference/optimizer.py)
    b2t[0] *= b2
    c1, c2 = 1 - b1t[0], 1 - b2t[0]
    w_sq, g_sq = 0.0, 0.0
    for i in range(w.size):
        g = _grad_at(w, diff, i, scale, l1, l2)
        m[i] = b1 * m[i] + (1 - b1) * g
        v[i] = b2 * v[i] + (1 - b2) * g * g
        adam[i] = (m[i] / c1) / np.sqrt(v[i] / c2 + eps)
        w_sq += w[i] * w[i]
        g_sq += adam[i] * adam[i]
    w_norm, g_norm = np.sqrt(w_sq), np.sqrt(g_sq)
    trust = w_norm / g_norm if w_norm > 0 and g_norm > 0 else 1.0
    for i in range(w.size):
        w[i] -= lr * trust * (adam[i] + wd * w[i])


@register_kernel("lamb_update", "numba")
def _lamb_f(ctx: KernelCtx) -> KernelFn:
    a = ctx.attrs
    consts = tuple(float(a[k]) for k in ("scale", "l1", "l2", "weight_decay", "beta1", "beta2", "epsilon"))
    adam = np.empty(ctx.in_descs[0].shape, ctx.in_descs[0].dtype.np)  # OneFlow's tmp buffer

    def kernel(ins, outs):
        _lamb(ins[0], ins[1], ins[2], ins[3], ins[4], ins[5], adam, float(ins[6][0]), *consts)

    return kernel


@register_kernel("adam_update", "numba")
def _adam_f(ctx: KernelCtx) -> KernelFn:
    # float64 constants (as the reference's Python floats): 1 - beta in float32 would be off by 5e-5
    a = ctx.attrs
    scale, l1, l2, wd = (float(a[k]) for k in ("scale", "l1", "l2", "weight_decay"))
    b1, b2, eps, correct = float(a["beta1"]), float(a["beta2"]), float(a["epsilon"]), a["do_bias_correction"]

    def kernel(ins, outs):
        lr = float(ins[4][0])
        if correct:  # OneFlow scales the rate by sqrt(1 - b2^t) / (1 - b1^t), t counted from 1
            t = int(ins[5][0]) + 1
            lr = lr * math.sqrt(1 - a["beta2"] ** t) / (1 - a["beta1"] ** t)
        _adam(ins[0], ins[1], ins[2], ins[3], lr, scale, l1, l2, wd, b1, b2, eps)

    return kernel


@register_kernel("rmsprop_update", "numba")
def _rmsprop_f(ctx: KernelCtx) -> KernelFn:
    a = ctx.attrs  # float64 constants, as in adam
    scale, l1, l2, wd = (float(a[k]) for k in ("scale", "l1", "l2", "weight_decay"))
    decay, eps = float(a["decay_rate"]), float(a["epsilon"])

    if a["centered"]:
        return lambda ins, outs: _rmsprop_centered(ins[0], ins[1], ins[2], ins[4], float(ins[3][0]), scale, l1, l2,
                                                   wd, decay, eps)

    def kernel(ins, outs):
        _rmsprop(ins[0], ins[1], ins[2], float(ins[3][0]), scale, l1, l2, wd, decay, eps)

    return kernel


@njit
def _sum_squares(x):
    x = x.ravel()
    s = 0.0  # float64, as the reference's np.square(g, dtype=np.float64)
    for i in range(x.size):
        s += np.float64(x[i]) * np.float64(x[i])
    return s


@njit
def _scaled(x, s, out):
    x, out = x.ravel(), out.ravel()
    for i in range(x.size):
        out[i] = x[i] * s


@register_kernel("clip_by_global_norm", "numba")
def _clip(ctx: KernelCtx) -> KernelFn:
    clip_norm = ctx.attrs["clip_norm"]

    def kernel(ins, outs):
        norm = math.sqrt(sum(_sum_squares(g) for g in ins))
        scale = clip_norm / max(norm, clip_norm)
        for g, out in zip(ins, outs):
            _scaled(g, scale, out)

    return kernel
