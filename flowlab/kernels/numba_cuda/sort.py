"""CUDA kernels of ops/sort_ops.py: each element finds its rank in its row (how many elements come before it:
smaller, or larger when descending, or equal with a lower index, as OneFlow's comparators order ties; NaN
last, as NumPy) and is
written there. O(n) work per element: meant for the rows of a debugger's jobs, not for long ones."""

from __future__ import annotations

from ..registry import KernelCtx, register_kernel
from ._cuda import cuda, current_launch, flat, launch1


@cuda.jit
def _rank_sort(x, out, n, k, descending, values):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for e in range(start, x.size, step):
        row, i = e // n, e % n
        base = row * n
        v = x[e]
        rank = 0
        for j in range(n):
            w = x[base + j]
            if v != v:  # NaN goes last in either direction, as the reference's NumPy sort puts it
                before = w == w or j < i
            elif w != w:
                before = False
            else:
                before = ((w > v) if descending else (w < v)) or (w == v and j < i)
            if before:
                rank += 1
        if rank < k:
            if values:
                out[row * k + rank] = v
            else:
                out[row * k + rank] = i


def _factory(kind: str):
    def factory(ctx: KernelCtx):
        n = ctx.in_descs[0].shape[-1]
        k = ctx.out_descs[0].shape[-1] if kind == "top_k" else n
        descending = kind == "top_k" or ctx.attrs["direction"] == "DESCENDING"
        threads = current_launch().threads

        def run(ins, outs, stream=0):
            launch1(_rank_sort, ins[0].size, threads, stream, flat(ins[0]), flat(outs[0]), n, k, descending,
                    kind == "sort")

        return run

    return factory


for _name in ("sort", "arg_sort", "top_k"):
    register_kernel(_name, "numba", "gpu")(_factory(_name))


@cuda.jit
def _in_top_k(targets, pred, out, classes, k):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for r in range(start, out.size, step):
        t = targets[r]
        ok = 0 <= t < classes
        above = 0
        if ok:
            tp = pred[r * classes + t]
            for c in range(classes):
                p = pred[r * classes + c]
                if p != p or p - p != 0:  # not finite: the row says nothing
                    ok = False
                    break
                if p > tp:
                    above += 1
        out[r] = 1 if ok and above < k else 0


@register_kernel("in_top_k", "numba", "gpu")
def _in_top_k_factory(ctx: KernelCtx):
    classes, k, threads = ctx.in_descs[1].shape[1], ctx.attrs["k"], current_launch().threads
    return lambda ins, outs, stream=0: launch1(_in_top_k, outs[0].size, threads, stream, flat(ins[0]), flat(ins[1]),
                                               flat(outs[0]), classes, k)
