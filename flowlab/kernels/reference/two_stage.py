"""NumPy reference kernels of ops/two_stage_ops.py (OneFlow's two_stage_reduce_kernel.cpp): the device stage
(extremum, int8 mask of the elements equal to it, int32 count of them), the global stage (extremum, mask) and their
gradients. Every kernel works on ``groups``: the input's flat indices, one row per output element."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def groups(shape: tuple[int, ...], axis: list[int] | tuple[int, ...]) -> np.ndarray:
    """(outputs, elements reduced into each) flat indices of a blob of ``shape`` reduced over ``axis`` (all axes
    when empty), the rows in the order of the reduced blob's elements."""
    rank = len(shape)
    reduced = sorted({a % rank for a in axis}) if len(axis) else list(range(rank))
    kept = [a for a in range(rank) if a not in reduced]
    idx = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).transpose(kept + reduced)
    width = int(np.prod([shape[a] for a in reduced]))
    return np.ascontiguousarray(idx.reshape(-1, width))


def last_axis_only(ctx: KernelCtx) -> bool:
    """Whether a stage reduces the last axis alone (the model-parallel loss's form, model_parallel.py's kernels)."""
    rank = len(ctx.in_descs[0].shape)
    return [a % rank for a in ctx.attrs["axis"]] == [rank - 1]


def stage(is_max: bool, with_count: bool):
    def factory(ctx: KernelCtx) -> KernelFn:
        g = groups(ctx.in_descs[0].shape, ctx.attrs["axis"])

        def kernel(ins, outs):
            x = ins[0].reshape(-1)[g]
            m = x.max(axis=1) if is_max else x.min(axis=1)  # NaN wins, as the Numba kernels
            eq = x == m[:, None]
            outs[0].reshape(-1)[...] = m
            outs[1].reshape(-1)[g] = eq
            if with_count:
                outs[2].reshape(-1)[...] = eq.sum(axis=1)

        return kernel

    return factory


def share(dy: np.ndarray, count: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """dy / count in the gradient's dtype (C++'s T / int32: truncated for integers); a group whose count is 0
    (all NaN) gets 0, whose elements no mask names anyway."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(count != 0, dy.astype(np.float64) / np.where(count != 0, count, 1), 0.0)
    return np.trunc(q).astype(dtype) if dtype.kind in "iu" else q.astype(dtype)


def _device_grad(ctx: KernelCtx) -> KernelFn:
    g = groups(ctx.in_descs[1].shape, ctx.attrs["axis"])
    dtype = ctx.out_descs[0].dtype.np

    def kernel(ins, outs):
        dy, mask, count = ins[0].reshape(-1), ins[1].reshape(-1)[g], ins[2].reshape(-1)
        outs[0].reshape(-1)[g] = mask * share(dy, count, dtype)[:, None]

    return kernel


def _global_grad(ctx: KernelCtx) -> KernelFn:
    g = groups(ctx.in_descs[1].shape, ctx.attrs["axis"])
    dtype = ctx.out_descs[0].dtype.np

    def kernel(ins, outs):
        dy = ins[0].reshape(-1)
        weight = ins[1].reshape(-1)[g].astype(np.int64) * ins[2].reshape(-1)[g]  # device_count where masked
        outs[0].reshape(-1)[g] = share(dy, weight.sum(axis=1), dtype)[:, None] * weight

    return kernel


register_kernel("reduce_min_device_stage", "reference")(stage(False, True))  # reduce_max's: model_parallel.py
register_kernel("reduce_min_global_stage", "reference")(stage(False, False))
for _kind in ("reduce_max", "reduce_min"):
    register_kernel(f"{_kind}_device_stage_grad", "reference")(_device_grad)
    register_kernel(f"{_kind}_global_stage_grad", "reference")(_global_grad)
