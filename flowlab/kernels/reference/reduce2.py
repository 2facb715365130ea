"""NumPy reference kernels of ops/reduce_ops2.py: reduce_min (a NaN wins, as np.min), reduce_prod (floats in
float64, integers wrapping as NumPy's), reduce_all / reduce_any (1 or 0 in the input's dtype; NaN is nonzero)."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel
from .reduce import reduce_axes


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
