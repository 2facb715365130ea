"""NumPy reference kernels: reductions, argmax, broadcast_like and the reduce_max gradient; reduce_min (a NaN wins,
as np.min), reduce_prod (floats in float64, integers wrapping as NumPy's), reduce_all / reduce_any (1 or 0 in the
input's dtype; NaN is nonzero)."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def reduce_axes(ctx: KernelCtx) -> tuple[int, ...]:
    rank = len(ctx.in_descs[0].shape)
    axis = ctx.attrs["axis"]
    if axis is None:
        return tuple(range(rank))
    return tuple(sorted(a % rank for a in ((axis,) if isinstance(axis, int) else axis)))


def sum_dtype(dtype: np.dtype) -> type | None:
    """The ``dtype=`` of a NumPy sum: float64 for floats (NumPy sums along a non-contiguous axis one element after
    another, in float32 for float32: 3e-5 off over 2^20 rows), None (NumPy's default) for integers."""
    return np.float64 if np.dtype(dtype).kind == "f" else None


def _reduce(fn, summing: bool = True):
    def factory(ctx: KernelCtx) -> KernelFn:
        axes = reduce_axes(ctx)
        out_shape = ctx.out_descs[0].shape
        extra = {"dtype": sum_dtype(ctx.in_descs[0].dtype.np)} if summing else {}

        def kernel(ins, outs):
            outs[0][...] = np.reshape(fn(ins[0], axis=axes, **extra), out_shape)

        return kernel

    return factory


register_kernel("reduce_sum", "reference")(_reduce(np.sum))
register_kernel("reduce_mean", "reference")(_reduce(np.mean))
register_kernel("reduce_max", "reference")(_reduce(np.max, summing=False))


@register_kernel("argmax", "reference")
def _argmax(ctx: KernelCtx) -> KernelFn:
    out_shape = ctx.out_descs[0].shape

    def kernel(ins, outs):
        outs[0][...] = np.argmax(ins[0], axis=-1).reshape(out_shape)

    return kernel


def broadcast_to_like(x: np.ndarray, like_shape: tuple[int, ...], axes: tuple[int, ...] | None) -> np.ndarray:
    """Broadcast ``x`` to ``like_shape``: over the reduced ``axes`` (kept as 1 or dropped in ``x``), or by
    numpy's rules when ``axes`` is None."""
    if axes is not None:
        x = x.reshape(tuple(1 if i in axes else d for i, d in enumerate(like_shape)))
    return np.broadcast_to(x, like_shape)


@register_kernel("broadcast_like", "reference")
def _broadcast_like(ctx: KernelCtx) -> KernelFn:
    like_shape = ctx.out_descs[0].shape
    axes = ctx.attrs["broadcast_axes"]

    def kernel(ins, outs):
        outs[0][...] = broadcast_to_like(ins[0], like_shape, axes)

    return kernel


@register_kernel("reduce_max_grad", "reference")
def _reduce_max_grad(ctx: KernelCtx) -> KernelFn:
    rank = len(ctx.in_descs[0].shape)
    axis = ctx.attrs["axis"]
    axes = tuple(range(rank)) if axis is None else tuple(
        sorted(a % rank for a in ((axis,) if isinstance(axis, int) else axis)))
    keep_shape = tuple(1 if i in axes else d for i, d in enumerate(ctx.in_descs[0].shape))

    def kernel(ins, outs):
        x, y, dy = ins
        mask = x == y.reshape(keep_shape)
        ties = mask.sum(axis=axes, keepdims=True)
        outs[0][...] = mask * (dy.reshape(keep_shape) / ties)

    return kernel


def _prod(x: np.ndarray, axis: tuple[int, ...]) -> np.ndarray:
    return np.prod(x, axis=axis, dtype=np.float64 if x.dtype.kind == "f" else None)


FUNCS = {"reduce_min": np.min, "reduce_prod": _prod, "reduce_all": lambda x, axis: np.all(x != 0, axis=axis),
         "reduce_any": lambda x, axis: np.any(x != 0, axis=axis)}


def _factory(fn):
    def factory(ctx: KernelCtx) -> KernelFn:
        axes, out_shape = reduce_axes(ctx), ctx.out_descs[0].shape

        def kernel(ins, outs):
            with np.errstate(all="ignore"):
                outs[0][...] = np.reshape(fn(ins[0], axis=axes), out_shape)

        return kernel

    return factory


for _name, _fn in FUNCS.items():
    register_kernel(_name, "reference")(_factory(_fn))


def _count(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        outs[0][...] = sum(int(np.count_nonzero(~np.isfinite(x))) for x in ins)

    return kernel


register_kernel("count_not_finite", "reference")(_count)
register_kernel("multi_count_not_finite", "reference")(_count)
