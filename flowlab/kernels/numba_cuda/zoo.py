"""CUDA kernels of the ops OneFlow's model zoo needs: one_hot, batch_gather, unsorted_batch_segment_sum, add_n,
tuple_identity and the N-d constant pad (see kernels/reference/zoo.py for what each computes). Indices are checked
on the device before anything is written, as the gather kernels do (layout.IndexCheck)."""

from __future__ import annotations

from ..reference.zoo import batch_dims, one_hot_values, pad_value
from ..registry import KernelCtx, register_kernel
from ._cuda import c_strides, cuda, current_launch, flat, launch1
from .elementwise import BINARY, UNARY, binary_launcher, filler, map1
from .layout import IndexCheck, copier


@cuda.jit
def _one_hot(ids, out, depth, on, off):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = on if ids[i // depth] == i % depth else off


@register_kernel("one_hot", "numba", "gpu")
def _one_hot_factory(ctx: KernelCtx):
    out_shape, depth = ctx.out_descs[0].shape, ctx.attrs["depth"]
    on, off = (ctx.out_descs[0].dtype.np.type(v) for v in one_hot_values(ctx))
    check, threads = IndexCheck(depth, "index", len(out_shape) - 1, "out", out_shape), current_launch().threads

    def run(ins, outs, stream=0):
        check(ins[0], stream)
        launch1(_one_hot, outs[0].size, threads, stream, flat(ins[0]), flat(outs[0]), depth, on, off)

    return run


@cuda.jit
def _batch_gather(params, ids, out, n, k, inner):
    # params (b, n, inner), ids (b, k), out (b, k, inner), all flat
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        e = i % inner
        bj = i // inner  # = b * k + j
        b = bj // k
        out[i] = params[(b * n + ids[bj]) * inner + e]


@cuda.jit
def _batch_segment_sum(data, ids, out, n, k, inner):
    # data (b, k, inner), ids (b, k), out (b, n, inner) zeroed; equal ids of one batch entry add atomically
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, data.size, step):
        e = i % inner
        bj = i // inner
        b = bj // k
        cuda.atomic.add(out, (b * n + ids[bj]) * inner + e, data[i])


@register_kernel("batch_gather", "numba", "gpu")
def _batch_gather_factory(ctx: KernelCtx):
    params, ids_shape = ctx.in_descs[0].shape, ctx.in_descs[1].shape
    _b, n, inner = batch_dims(ids_shape, params)
    k = ids_shape[-1]
    check, threads = IndexCheck(n, "index", len(ids_shape) - 1, "in", params), current_launch().threads

    def run(ins, outs, stream=0):
        check(ins[1], stream)
        launch1(_batch_gather, outs[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(outs[0]), n, k,
                inner)

    return run


@register_kernel("unsorted_batch_segment_sum", "numba", "gpu")
def _batch_segment_sum_factory(ctx: KernelCtx):
    ids_shape, out_shape = ctx.in_descs[1].shape, ctx.out_descs[0].shape
    _b, n, inner = batch_dims(ids_shape, out_shape)
    k = ids_shape[-1]
    check, threads = IndexCheck(n, "segment id", len(ids_shape) - 1, "out", out_shape), current_launch().threads
    zero = filler(ctx.out_descs[0].dtype.np, 0)

    def run(ins, outs, stream=0):
        check(ins[1], stream)
        zero(outs[0], stream)
        launch1(_batch_segment_sum, ins[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(outs[0]), n, k,
                inner)

    return run


@register_kernel("add_n", "numba", "gpu")
def _add_n_factory(ctx: KernelCtx):
    shape = ctx.out_descs[0].shape
    add = binary_launcher(BINARY["broadcast_add"], shape, shape, shape, current_launch().threads)

    def run(ins, outs, stream=0):
        add(ins[0], ins[1], outs[0], stream)
        for x in ins[2:]:  # left to right, as the reference; each thread reads its element before writing it
            add(outs[0], x, outs[0], stream)

    return run


@register_kernel("tuple_identity", "numba", "gpu")
def _tuple_identity_factory(ctx: KernelCtx):
    copy, threads = map1(UNARY["copy"]), current_launch().threads

    def run(ins, outs, stream=0):
        for x, y in zip(ins, outs):
            launch1(copy, y.size, threads, stream, flat(x), flat(y), 0.0)

    return run


def _window_base(before: tuple[int, ...], big: tuple[int, ...]) -> int:
    return int(sum(b * int(s) for b, s in zip(before, c_strides(big))))


@register_kernel("pad", "numba", "gpu")
def _pad_factory(ctx: KernelCtx):
    x, y = ctx.in_descs[0].shape, ctx.out_descs[0].shape
    fill = filler(ctx.out_descs[0].dtype.np, pad_value(ctx, ctx.in_descs[0].dtype.np))
    move = copier(x, 0, c_strides(x), _window_base(ctx.attrs["padding_before"], y), c_strides(y))

    def run(ins, outs, stream=0):
        fill(outs[0], stream)
        move(ins[0], outs[0], stream)

    return run


@register_kernel("pad_grad", "numba", "gpu")
def _pad_grad_factory(ctx: KernelCtx):
    dy, dx = ctx.in_descs[0].shape, ctx.out_descs[0].shape
    move = copier(dx, _window_base(ctx.attrs["padding_before"], dy), c_strides(dy), 0, c_strides(dx))
    return lambda ins, outs, stream=0: move(ins[0], outs[0], stream)
