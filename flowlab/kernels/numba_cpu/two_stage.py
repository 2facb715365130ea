"""Numba CPU kernels of ops/two_stage_ops.py (see kernels/reference/two_stage.py): one loop per output element
over its group of input elements (``groups``); reduce_max's stages over the last axis alone are
model_parallel.py's."""

from __future__ import annotations

from ..reference.two_stage import groups
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def _stage(x, g, out, mask, count, is_max, with_count):
    for o in range(g.shape[0]):
        m = x[g[o, 0]]
        for j in range(1, g.shape[1]):
            v = x[g[o, j]]
            if (v > m if is_max else v < m) or (v != v and m == m):  # a NaN wins, as np.max / np.min
                m = v
        out[o] = m
        n = 0
        for j in range(g.shape[1]):
            hit = x[g[o, j]] == m
            mask[g[o, j]] = hit
            n += hit
        if with_count:
            count[o] = n


@njit
def _share(dy, c, is_int):
    """dy / c in the gradient's dtype (truncated for integers, as C++'s T / int32); 0 where c is 0."""
    if c == 0:
        return 0.0
    q = dy / c
    return float(int(q)) if is_int else q


@njit
def _device_grad(dy, mask, count, g, dx, is_int):
    for o in range(g.shape[0]):
        q = _share(dy[o], count[o], is_int)
        for j in range(g.shape[1]):
            dx[g[o, j]] = mask[g[o, j]] * q


@njit
def _global_grad(dy, mask, dc, g, dx, is_int):
    for o in range(g.shape[0]):
        total = 0
        for j in range(g.shape[1]):
            total += dc[g[o, j]] * mask[g[o, j]]
        q = _share(dy[o], total, is_int)
        for j in range(g.shape[1]):
            i = g[o, j]
            dx[i] = q * (dc[i] * mask[i])


def stage(is_max: bool, with_count: bool):
    def factory(ctx: KernelCtx) -> KernelFn:
        g = groups(ctx.in_descs[0].shape, ctx.attrs["axis"])

        def kernel(ins, outs):
            count = outs[2].reshape(-1) if with_count else outs[0].reshape(-1)  # unused without a count
            _stage(ins[0].reshape(-1), g, outs[0].reshape(-1), outs[1].reshape(-1), count, is_max, with_count)

        return kernel

    return factory


def _grad(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        g = groups(ctx.in_descs[1].shape, ctx.attrs["axis"])
        is_int = ctx.out_descs[0].dtype.np.kind in "iu"

        def kernel(ins, outs):
            fn(ins[0].reshape(-1), ins[1].reshape(-1), ins[2].reshape(-1), g, outs[0].reshape(-1), is_int)

        return kernel

    return factory


# reduce_max's stages: model_parallel.py's kernels, which call these for axes other than the last alone
register_kernel("reduce_min_device_stage", "numba")(stage(False, True))
register_kernel("reduce_min_global_stage", "numba")(stage(False, False))
for _kind in ("reduce_max", "reduce_min"):
    register_kernel(f"{_kind}_device_stage_grad", "numba")(_grad(_device_grad))
    register_kernel(f"{_kind}_global_stage_grad", "numba")(_grad(_global_grad))
