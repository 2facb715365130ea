"""unique_with_counts' NumPy reference kernel (ops/unique_ops.py): y in order of first appearance, zero past
num_unique; idx maps each x to its y; count per y. A NaN is never equal to another (each its own value), as in
the Numba and CUDA kernels' comparisons."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


@register_kernel("unique_with_counts", "reference")
def _unique(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        x = ins[0]
        y, idx, count, num = outs
        seen: dict = {}
        for i, v in enumerate(x.tolist()):
            key = v if v == v else ("nan", i)  # NaN != NaN
            idx[i] = seen.setdefault(key, len(seen))
        k = len(seen)
        y[...], count[...] = 0, 0
        first = np.full(k, -1, np.int64)
        for i in range(x.size - 1, -1, -1):
            first[idx[i]] = i
        y[:k] = x[first]
        count[:k] = np.bincount(idx.astype(np.int64), minlength=k)[:k]
        num[0] = k

    return kernel
