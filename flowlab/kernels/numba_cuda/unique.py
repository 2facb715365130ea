"""unique_with_counts' CUDA kernel (see kernels/reference/unique.py): one thread walks x in order and looks each
value up among the distinct ones found so far (O(n · unique); OneFlow's GPU kernel sorts with cub)."""

from __future__ import annotations

from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, flat, launch1


@cuda.jit
def _unique(x, y, idx, count, num):
    if cuda.grid(1) != 0:
        return
    k = 0
    for i in range(x.size):
        y[i] = 0
        count[i] = 0
    for i in range(x.size):
        r = k
        for j in range(k):
            if y[j] == x[i]:
                r = j
                break
        if r == k:
            y[k] = x[i]
            k += 1
        idx[i] = r
        count[r] += 1
    num[0] = k


@register_kernel("unique_with_counts", "numba", "gpu")
def _unique_factory(ctx: KernelCtx):
    def run(ins, outs, stream=0):
        launch1(_unique, 1, 1, stream, flat(ins[0]), *(flat(a) for a in outs))

    return run
