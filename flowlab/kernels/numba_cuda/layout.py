"""CUDA kernels that move elements: transpose, concat, split_like, slice and its gradient, broadcast_like, the pads
and their gradients, gather and unsorted_segment_sum_like (its gradient).

Most are one kernel, ``strided_copy``: thread i unravels i over a shape and reads ``src[src_base + sum(k_d *
src_strides[d])]`` into ``dst[dst_base + sum(k_d * dst_strides[d])]``. A transpose permutes the source strides, a
broadcast zeroes them, a slice offsets and steps them, and concat/split offset the destination or the source.
"""

from __future__ import annotations

import numba
import numpy as np

from ..checks import raise_out_of_range
from ..reference.gather_slice import slices
from ..registry import KernelCtx, register_kernel
from ._cuda import (
    broadcast_strides,
    c_strides,
    const,
    cuda,
    current_launch,
    first_out_of_range,
    flat,
    launch1,
    read_back,
    shape_array,
)
from .elementwise import filler


@cuda.jit
def strided_copy(src, src_base, src_strides, dst, dst_base, dst_strides, shape, n):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, n, step):
        rem, so, do = i, src_base, dst_base
        for d in range(len(shape) - 1, -1, -1):
            k = rem % shape[d]
            rem //= shape[d]
            so += k * src_strides[d]
            do += k * dst_strides[d]
        dst[do] = src[so]


def copier(shape: tuple[int, ...], src_base: int, src_strides: np.ndarray, dst_base: int, dst_strides: np.ndarray):
    """run(src, dst, stream): the strided copy of ``shape`` elements (device constants made once)."""
    n, threads = int(np.prod(shape)), current_launch().threads
    shp, s_str, d_str = const(shape_array(shape)), const(src_strides), const(dst_strides)

    def run(src, dst, stream):
        launch1(strided_copy, n, threads, stream, flat(src), src_base, s_str, flat(dst), dst_base, d_str, shp, n)

    return run


@register_kernel("transpose", "numba", "gpu")
def _transpose(ctx: KernelCtx):
    perm = ctx.attrs["perm"]
    in_strides = c_strides(ctx.in_descs[0].shape)
    out_shape = ctx.out_descs[0].shape
    move = copier(out_shape, 0, np.array([in_strides[p] for p in perm], np.int64), 0, c_strides(out_shape))
    return lambda ins, outs, stream=0: move(ins[0], outs[0], stream)


def _part_copiers(whole: tuple[int, ...], parts: list[tuple[int, ...]], axis: int, into_whole: bool):
    """One copier per part along ``axis`` of ``whole``: part -> its window of whole (concat) or back (split)."""
    whole_strides, runs, offset = c_strides(whole), [], 0
    for shape in parts:
        base = offset * int(whole_strides[axis])
        if into_whole:
            runs.append(copier(shape, 0, c_strides(shape), base, whole_strides))
        else:
            runs.append(copier(shape, base, whole_strides, 0, c_strides(shape)))
        offset += shape[axis]
    return runs


@register_kernel("concat", "numba", "gpu")
def _concat(ctx: KernelCtx):
    out = ctx.out_descs[0].shape
    runs = _part_copiers(out, [d.shape for d in ctx.in_descs], ctx.attrs["axis"] % len(out), True)

    def run(ins, outs, stream=0):
        for move, x in zip(runs, ins):
            move(x, outs[0], stream)

    return run


@register_kernel("split_like", "numba", "gpu")
def _split_like(ctx: KernelCtx):
    whole = ctx.in_descs[0].shape
    runs = _part_copiers(whole, [d.shape for d in ctx.out_descs], ctx.attrs["axis"] % len(whole), False)

    def run(ins, outs, stream=0):
        for move, y in zip(runs, outs):
            move(ins[0], y, stream)

    return run


def _slice_window(ctx: KernelCtx, whole: tuple[int, ...]) -> tuple[int, np.ndarray]:
    """The slice as (base, strides) into an array of shape ``whole``."""
    index, strides = slices(ctx, whole), c_strides(whole)
    base = sum(s.start * int(st) for s, st in zip(index, strides))
    return base, np.array([s.step * int(st) for s, st in zip(index, strides)], np.int64)


@register_kernel("slice", "numba", "gpu")
def _slice(ctx: KernelCtx):
    base, strides = _slice_window(ctx, ctx.in_descs[0].shape)
    out = ctx.out_descs[0].shape
    move = copier(out, base, strides, 0, c_strides(out))
    return lambda ins, outs, stream=0: move(ins[0], outs[0], stream)


@register_kernel("slice_grad", "numba", "gpu")
def _slice_grad(ctx: KernelCtx):
    base, strides = _slice_window(ctx, ctx.out_descs[0].shape)
    dy = ctx.in_descs[0].shape
    move, zero = copier(dy, 0, c_strides(dy), base, strides), filler(ctx.out_descs[0].dtype.np, 0)

    def run(ins, outs, stream=0):
        zero(outs[0], stream)
        move(ins[0], outs[0], stream)

    return run


@register_kernel("broadcast_like", "numba", "gpu")
def _broadcast_like(ctx: KernelCtx):
    like, axes = ctx.out_descs[0].shape, ctx.attrs["broadcast_axes"]
    x = ctx.in_descs[0].shape
    if axes is not None:  # x has the reduced axes kept as 1 or dropped
        x = tuple(1 if i in axes else d for i, d in enumerate(like))
    move = copier(like, 0, broadcast_strides(x, like), 0, c_strides(like))
    return lambda ins, outs, stream=0: move(ins[0], outs[0], stream)


@cuda.jit(device=True)
def _reflect(i, n):
    if i < 0:
        return -i
    if i >= n:
        return 2 * (n - 1) - i
    return i


@cuda.jit
def _pad2d(x, y, top, left, reflect):
    # one thread per output element of (n, c, H, W); x: (n, c, h, w)
    h, w = x.shape[2], x.shape[3]
    hh, ww = y.shape[2], y.shape[3]
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, y.size, step):
        j = i % ww
        r = (i // ww) % hh
        plane = i // (ww * hh)
        si, sj = r - top, j - left
        p, c = plane // y.shape[1], plane % y.shape[1]
        if reflect:
            y[p, c, r, j] = x[p, c, _reflect(si, h), _reflect(sj, w)]
        elif 0 <= si < h and 0 <= sj < w:
            y[p, c, r, j] = x[p, c, si, sj]
        else:
            y[p, c, r, j] = 0


@cuda.jit(device=True)
def _sources(s, n, pad, big):
    """The output positions along one axis whose reflection is input position s: s + pad, pad - s (s in 1..pad)
    and 2 (n - 1) - s + pad (the far side); -1 where there is none. ``big``: the padded length."""
    a = s + pad
    b = pad - s if 0 < s and pad - s >= 0 else -1
    c = 2 * (n - 1) - s + pad if s < n - 1 and 2 * (n - 1) - s + pad < big else -1
    return a, b, c


@cuda.jit
def _reflection_pad2d_grad(dy, dx, top, left):
    # one thread per dx element: the sum of the (at most 3 x 3) dy cells that copied it
    h, w = dx.shape[2], dx.shape[3]
    hh, ww = dy.shape[2], dy.shape[3]
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dx.size, step):
        j = i % w
        r = (i // w) % h
        plane = i // (w * h)
        p, c = plane // dx.shape[1], plane % dx.shape[1]
        rows = _sources(r, h, top, hh)
        cols = _sources(j, w, left, ww)
        acc = 0.0
        for a in range(3):
            ri = rows[a]
            if ri >= 0:
                for b in range(3):
                    cj = cols[b]
                    if cj >= 0:
                        acc += dy[p, c, ri, cj]
        dx[p, c, r, j] = acc


def _pad_factory(reflect: bool):
    def factory(ctx: KernelCtx):
        left, _right, top, _bottom = ctx.attrs["padding"]
        threads = current_launch().threads

        def run(ins, outs, stream=0):
            launch1(_pad2d, outs[0].size, threads, stream, ins[0], outs[0], top, left, reflect)

        return run

    return factory


@register_kernel("reflection_pad2d_grad", "numba", "gpu")
def _reflection_grad(ctx: KernelCtx):
    left, _right, top, _bottom = ctx.attrs["padding"]
    threads = current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_reflection_pad2d_grad, outs[0].size, threads, stream, ins[0], outs[0], top, left)

    return run


@register_kernel("zero_pad2d_grad", "numba", "gpu")
def _zero_grad(ctx: KernelCtx):
    left, _right, top, _bottom = ctx.attrs["padding"]
    dy, dx = ctx.in_descs[0].shape, ctx.out_descs[0].shape
    move = copier(dx, top * dy[3] + left, c_strides(dy), 0, c_strides(dx))  # the dx-sized window of dy
    return lambda ins, outs, stream=0: move(ins[0], outs[0], stream)


register_kernel("reflection_pad2d", "numba", "gpu")(_pad_factory(True))
register_kernel("zero_pad2d", "numba", "gpu")(_pad_factory(False))


@cuda.jit
def _gather(x, ids, y, outer, n, inner):
    # x: (outer, n, inner) flat; ids: m flat; y: (outer, m, inner) flat
    m = ids.size
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, y.size, step):
        k = i % inner
        j = (i // inner) % m
        o = i // (inner * m)
        y[i] = x[(o * n + ids[j]) * inner + k]


@cuda.jit
def _segment_sum(data, ids, out, outer, n, inner):
    # data: (outer, m, inner) flat; out: (outer, n, inner) flat, zeroed; rows with equal ids add atomically
    m = ids.size
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, data.size, step):
        k = i % inner
        j = (i // inner) % m
        o = i // (inner * m)
        cuda.atomic.add(out, (o * n + ids[j]) * inner + k, data[i])


@cuda.jit
def _segment_sum_ordered(data, ids, out, outer, n, inner, lo):
    # one thread per out element, summing the data rows with its id in order: for the 8-bit types, which have no
    # atomic add on the GPU (the PTX check caught it); O(m) per element, so the wide types keep the atomics
    m = ids.size
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        k = i % inner
        s = (i // inner) % n
        o = i // (inner * n)
        acc = numba.int64(0)
        for j in range(m):
            if ids[j] == s:
                acc += data[(o * m + j) * inner + k]
        out[i] = (acc - lo) % 256 + lo  # wrapped into the 8-bit range, as NumPy's sum wraps


def _as3(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    return int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:]))


class IndexCheck:
    """kernels/checks.py's range check on device ids: the first bad position is found on the device and read back
    (one sync); the ids come to the host only to name the bad value in the error."""

    def __init__(self, n: int, what: str, axis: int, target: str, target_shape: tuple[int, ...]) -> None:
        self.n, self.what, self.axis, self.target, self.target_shape = n, what, axis, target, target_shape
        self.scratch = cuda.device_array(1, np.int64)
        self.threads = current_launch().threads

    def __call__(self, ids, stream) -> None:
        bad = first_out_of_range(ids, self.n, stream, self.threads, self.scratch)
        if bad >= 0:
            raise_out_of_range(read_back(ids, stream), bad, self.n, self.what, self.axis, self.target,
                               self.target_shape)


@cuda.jit
def _gather_slice(x, ids, y, outer, n, inner, lower):
    # this device holds rows [lower, lower + n): the indices of other devices' rows give zeros
    m = ids.size
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, y.size, step):
        k = i % inner
        j = (i // inner) % m
        o = i // (inner * m)
        r = ids[j] - lower
        y[i] = x[(o * n + r) * inner + k] if 0 <= r < n else 0


@register_kernel("gather", "numba", "gpu")
def _gather_factory(ctx: KernelCtx):
    from ..reference.gather_slice import gather_rows

    shape = ctx.in_descs[0].shape
    axis = ctx.attrs["axis"] % len(shape)
    outer, n, inner = _as3(shape, axis)
    lower, _rows, logical = gather_rows(ctx)
    threads = current_launch().threads
    if logical != n:
        check = IndexCheck(logical, "index", axis, "in", (*shape[:axis], logical, *shape[axis + 1:]))

        def sliced(ins, outs, stream=0):
            check(ins[1], stream)
            launch1(_gather_slice, outs[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(outs[0]), outer,
                    n, inner, lower)

        return sliced
    check = IndexCheck(n, "index", axis, "in", shape)

    def run(ins, outs, stream=0):
        check(ins[1], stream)
        launch1(_gather, outs[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(outs[0]), outer, n, inner)

    return run


@register_kernel("unsorted_segment_sum_like", "numba", "gpu")
def _segment_sum_factory(ctx: KernelCtx):
    from ..reference.segment import sliced_segment_sum

    sliced = sliced_segment_sum(ctx)  # a device holding a slice of the segments: through the host
    if sliced is not None:
        def host(ins, outs, stream=0):
            out = np.empty(outs[0].shape, outs[0].dtype)
            sliced([read_back(ins[0], stream), read_back(ins[1], stream)], [out])
            outs[0].copy_to_device(out, stream=stream)

        return host
    like = ctx.out_descs[0].shape
    axis = ctx.attrs["axis"] % len(like)
    outer, n, inner = _as3(like, axis)
    check, threads = IndexCheck(n, "segment id", axis, "like", like), current_launch().threads
    zero = filler(ctx.out_descs[0].dtype.np, 0)
    if ctx.out_descs[0].dtype.np.itemsize == 1:
        lo = int(np.iinfo(ctx.out_descs[0].dtype.np).min)
        def ordered(ins, outs, stream=0):
            check(ins[1], stream)
            launch1(_segment_sum_ordered, outs[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(outs[0]),
                    outer, n, inner, lo)

        return ordered

    def run(ins, outs, stream=0):
        check(ins[1], stream)
        zero(outs[0], stream)
        launch1(_segment_sum, ins[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(outs[0]), outer, n,
                inner)

    return run
