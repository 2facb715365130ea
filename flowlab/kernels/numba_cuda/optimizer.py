"""CUDA kernels of the training ops: the SGD, momentum, Adam and RMSProp updates (variable and state in place, one
thread per element, the learning rate and step read from their device blobs when the act runs), assign, global-norm
clipping, and the learning-rate schedule. They mirror kernels/reference/optimizer.py expression by expression.
"""

from __future__ import annotations

import math

import numpy as np

from ..numba_cpu.schedule import _learning_rate, schedule_constants
from ..registry import KernelCtx, register_kernel
from ._cuda import block_sum, blocks, cuda, current_launch, flat, launch1, sqrt
from .elementwise import UNARY, map1


@cuda.jit(device=True)
def effective_grad(w, diff, scale, l1, l2):
    """The update ops' fused prologue (OneFlow's scale/l1/l2): a zero coefficient adds nothing (not 0 * inf)."""
    g = diff * scale
    if l1 != 0.0:
        g += l1 * (1.0 if w > 0 else (-1.0 if w < 0 else w * 0.0))
    if l2 != 0.0:
        g += l2 * w
    return g


@cuda.jit
def _sgd(w, diff, lr_blob, scale, l1, l2, wd):
    lr = float(lr_blob[0])  # float64, as the reference (a float32 scalar times a float stays float32 in Python)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, w.size, step):
        g = effective_grad(w[i], diff[i], scale, l1, l2)
        if wd != 0.0:
            w[i] -= lr * wd * w[i]
        w[i] -= lr * g


@cuda.jit
def _momentum(w, diff, v, lr_blob, beta, scale, l1, l2, wd):
    lr = float(lr_blob[0])  # float64, as the reference (a float32 scalar times a float stays float32 in Python)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, w.size, step):
        g = effective_grad(w[i], diff[i], scale, l1, l2)
        wv = w[i]
        v[i] = beta * v[i] - lr * g  # OneFlow's MomentumUpdateFunctor: the decay is not in the momentum
        w[i] = wv + v[i]
        if wd != 0.0:  # a zero decay adds nothing, not 0 * inf = NaN
            w[i] -= lr * wd * wv


@cuda.jit
def _adam(w, diff, m, v, lr_blob, step_blob, b1, b2, eps, wd, correct, scale, l1, l2):
    lr = float(lr_blob[0])
    if correct:  # OneFlow scales the rate by sqrt(1 - b2^t) / (1 - b1^t), t counted from 1
        t = step_blob[0] + 1
        lr = lr * math.sqrt(1.0 - b2**t) / (1.0 - b1**t)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, w.size, step):
        g = effective_grad(w[i], diff[i], scale, l1, l2)
        m[i] = b1 * m[i] + (1.0 - b1) * g
        v[i] = b2 * v[i] + (1.0 - b2) * g * g
        w[i] -= lr * (m[i] / (sqrt(v[i]) + eps) + wd * w[i])


@cuda.jit
def _rmsprop(w, diff, ms, lr_blob, decay, eps, wd, scale, l1, l2):
    # wd: taken and unused, as OneFlow's RmsPropUpdateFunctor (it applies no weight decay)
    lr = float(lr_blob[0])  # float64, as the reference (a float32 scalar times a float stays float32 in Python)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, w.size, step):
        g = effective_grad(w[i], diff[i], scale, l1, l2)
        ms[i] = decay * ms[i] + (1.0 - decay) * g * g
        w[i] -= lr * g / sqrt(ms[i] + eps)


@cuda.jit
def _rmsprop_centered(w, diff, ms, mg, lr_blob, decay, eps, wd, scale, l1, l2):
    lr = float(lr_blob[0])
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, w.size, step):
        g = effective_grad(w[i], diff[i], scale, l1, l2)
        ms[i] = decay * ms[i] + (1.0 - decay) * g * g
        mg[i] = decay * mg[i] + (1.0 - decay) * g
        w[i] -= lr * g / sqrt(ms[i] - mg[i] * mg[i] + eps)


@cuda.jit
def _indexed_slices_adam(w, values, order, starts, rows_of, m, v, feat, lr_blob, step_blob, correct, scale, wd,
                         b1, b2, eps):
    # one thread per (group of equal ids, feature): the group's values summed in index order, then Adam on that row
    lr = float(lr_blob[0])
    if correct:
        t = step_blob[0] + 1
        lr = lr * math.sqrt(1.0 - b2**t) / (1.0 - b1**t)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, rows_of.size * feat, step):
        gi, j = i // feat, i % feat
        g = 0.0
        for k in range(starts[gi], starts[gi + 1]):
            g += values[order[k] * feat + j] * scale
        at = rows_of[gi] * feat + j
        m[at] = b1 * m[at] + (1.0 - b1) * g
        v[at] = b2 * v[at] + (1.0 - b2) * g * g
        w[at] -= lr * (m[at] / (sqrt(v[at]) + eps) + wd * w[at])


@register_kernel("indexed_slices_adam_update", "numba", "gpu")
def _indexed_slices_adam_f(ctx: KernelCtx):
    a = ctx.attrs
    consts = tuple(float(a[k]) for k in ("scale", "weight_decay", "beta1", "beta2", "epsilon"))
    feat, threads, groups = int(np.prod(ctx.in_descs[0].shape[1:])), current_launch().threads, _host_groups(ctx)

    def run(ins, outs, stream=0):
        found = groups(ins[1], stream)
        if found is not None:
            launch1(_indexed_slices_adam, int(found[2].size) * feat, threads, stream, flat(ins[0]), flat(ins[2]),
                    *found, flat(ins[4]), flat(ins[5]), feat, ins[3], ins[6], bool(a["do_bias_correction"]), *consts)

    return run


@cuda.jit
def _indexed_sgd(w, values, order, starts, rows_of, mom, feat, lr_blob, scale, wd, beta, momentum):
    lr = float(lr_blob[0])
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, rows_of.size * feat, step):
        gi, j = i // feat, i % feat
        g = 0.0
        for k in range(starts[gi], starts[gi + 1]):
            g += values[order[k] * feat + j] * scale
        at = rows_of[gi] * feat + j
        if momentum:  # MomentumUpdateFunctor: the decay is not in the momentum
            mom[at] = beta * mom[at] - lr * g
            w[at] += mom[at] - lr * wd * w[at]
        else:
            w[at] -= lr * (g + wd * w[at])


def _host_groups(ctx: KernelCtx):
    """groups(ids, stream) -> (order, starts, rows) on the device, or None: the ids come to the host (one sync) to
    be checked against the logical table and grouped (a batch's ids, not the table); other devices' rows left out."""
    from ..checks import check_indices
    from ..reference.optimizer import table_rows
    from ._cuda import read_back

    shape = ctx.in_descs[0].shape
    lower, rows, logical = table_rows(ctx)

    def groups(ids, stream):
        all_ids = read_back(ids, stream).reshape(-1)
        check_indices(all_ids, logical, "index", 0, "model", (logical, *shape[1:]))
        mine = np.flatnonzero((all_ids >= lower) & (all_ids < lower + rows))
        if not mine.size:
            return None
        order = mine[np.argsort(all_ids[mine], kind="mergesort")]  # positions in the values, grouped by row
        sorted_ids = all_ids[order] - lower
        starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1], True]).astype(np.int64)
        return [cuda.to_device(x, stream=stream) for x in (order.astype(np.int64), starts,
                                                            sorted_ids[starts[:-1]].astype(np.int64))]

    return groups


def _indexed_sgd_factory(momentum: bool):
    def factory(ctx: KernelCtx):
        a, threads = ctx.attrs, current_launch().threads
        feat, groups = int(np.prod(ctx.in_descs[0].shape[1:])), _host_groups(ctx)
        consts = (float(a["scale"]), float(a["weight_decay"]), float(a.get("beta", 0.0)), momentum)

        def run(ins, outs, stream=0):
            found = groups(ins[1], stream)
            if found is not None:
                mom = flat(ins[4]) if momentum else flat(ins[0])
                launch1(_indexed_sgd, int(found[2].size) * feat, threads, stream, flat(ins[0]), flat(ins[2]), *found,
                        mom, feat, ins[3], *consts)

        return run

    return factory


register_kernel("indexed_slices_sgd_update", "numba", "gpu")(_indexed_sgd_factory(False))
register_kernel("indexed_slices_momentum_update", "numba", "gpu")(_indexed_sgd_factory(True))


def _prologue(ctx: KernelCtx) -> tuple[float, float, float]:
    return float(ctx.attrs["scale"]), float(ctx.attrs["l1"]), float(ctx.attrs["l2"])


@register_kernel("sgd_update", "numba", "gpu")
def _sgd_f(ctx: KernelCtx):
    scale, l1, l2 = _prologue(ctx)
    wd, threads = float(ctx.attrs["weight_decay"]), current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_sgd, ins[0].size, threads, stream, flat(ins[0]), flat(ins[1]), ins[2], scale, l1, l2, wd)

    return run


@register_kernel("momentum_update", "numba", "gpu")
def _momentum_f(ctx: KernelCtx):
    scale, l1, l2 = _prologue(ctx)
    beta, wd, threads = float(ctx.attrs["beta"]), float(ctx.attrs["weight_decay"]), current_launch().threads

    def run(ins, outs, stream=0):
        launch1(_momentum, ins[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(ins[2]), ins[3], beta,
                scale, l1, l2, wd)

    return run


@register_kernel("adam_update", "numba", "gpu")
def _adam_f(ctx: KernelCtx):
    a = ctx.attrs
    scale, l1, l2 = _prologue(ctx)
    consts = (float(a["beta1"]), float(a["beta2"]), float(a["epsilon"]), float(a["weight_decay"]),
              bool(a["do_bias_correction"]), scale, l1, l2)
    threads = current_launch().threads

    def run(ins, outs, stream=0):
        w, diff, m, v, lr, step = ins
        launch1(_adam, w.size, threads, stream, flat(w), flat(diff), flat(m), flat(v), lr, step, *consts)

    return run


@register_kernel("rmsprop_update", "numba", "gpu")
def _rmsprop_f(ctx: KernelCtx):
    a = ctx.attrs
    scale, l1, l2 = _prologue(ctx)
    consts = (float(a["decay_rate"]), float(a["epsilon"]), float(a["weight_decay"]), scale, l1, l2)
    threads = current_launch().threads
    if a["centered"]:
        def centered(ins, outs, stream=0):
            launch1(_rmsprop_centered, ins[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(ins[2]),
                    flat(ins[4]), ins[3], *consts)

        return centered

    def run(ins, outs, stream=0):
        launch1(_rmsprop, ins[0].size, threads, stream, flat(ins[0]), flat(ins[1]), flat(ins[2]), ins[3], *consts)

    return run


@register_kernel("assign", "numba", "gpu")
def _assign(ctx: KernelCtx):
    copy, threads = map1(UNARY["copy"]), current_launch().threads

    def run(ins, outs, stream=0):
        launch1(copy, ins[0].size, threads, stream, flat(ins[1]), flat(ins[0]), 0.0)

    return run


def _sum_squares_kernel(threads: int):
    import numba

    @cuda.jit
    def kernel(g, total):
        # total[0] += sum(g * g), in float64: a block reduction, then one atomic add per block
        shared = cuda.shared.array(threads, numba.float64)
        tid = cuda.threadIdx.x
        part = 0.0
        for i in range(cuda.grid(1), g.size, cuda.gridsize(1)):
            part += float(g[i]) * float(g[i])
        s = block_sum(shared, tid, part)
        if tid == 0:
            cuda.atomic.add(total, 0, s)

    return kernel


_SUM_SQUARES: dict[int, object] = {}


@cuda.jit
def _clip_scale(g, total, clip_norm, out):
    scale = clip_norm / max(math.sqrt(total[0]), clip_norm)
    for i in range(cuda.grid(1), g.size, cuda.gridsize(1)):
        out[i] = g[i] * scale


@register_kernel("clip_by_global_norm", "numba", "gpu")
def _clip(ctx: KernelCtx):
    launch = current_launch()
    sum_squares = _SUM_SQUARES.setdefault(launch.threads, _sum_squares_kernel(launch.threads))
    clip_norm = float(ctx.attrs["clip_norm"])
    total = cuda.device_array(1, np.float64)
    zero = np.zeros(1)

    def run(ins, outs, stream=0):
        total.copy_to_device(zero, stream=stream)
        for g in ins:  # the norm stays on the device: no read-back between the two passes
            if g.size:
                sum_squares[blocks(g.size, launch.threads, launch.max_blocks), launch.threads, stream](flat(g), total)
        for g, out in zip(ins, outs):
            launch1(_clip_scale, g.size, launch.threads, stream, flat(g), total, clip_norm, flat(out))

    return run


@cuda.jit
def _lamb_moments(w, diff, m, v, b1t, b2t, adam, scale, l1, l2, b1, b2, eps):
    c1, c2 = 1.0 - b1t[0], 1.0 - b2t[0]
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        g = effective_grad(w[i], diff[i], scale, l1, l2)
        m[i] = b1 * m[i] + (1.0 - b1) * g
        v[i] = b2 * v[i] + (1.0 - b2) * g * g
        adam[i] = (m[i] / c1) / sqrt(v[i] / c2 + eps)


@cuda.jit
def _lamb_betas(b1t, b2t, b1, b2):
    if cuda.grid(1) == 0:  # OneFlow advances beta^t before using it (kernels/reference/optimizer.py)
        b1t[0] *= b1
        b2t[0] *= b2


@cuda.jit
def _lamb_apply(w, adam, norms, lr_blob, wd):
    w_norm, g_norm = math.sqrt(norms[0]), math.sqrt(norms[1])
    trust = w_norm / g_norm if w_norm > 0 and g_norm > 0 else 1.0
    lr = float(lr_blob[0]) * trust
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        w[i] -= lr * (adam[i] + wd * w[i])


@register_kernel("lamb_update", "numba", "gpu")
def _lamb_f(ctx: KernelCtx):
    a, launch = ctx.attrs, current_launch()
    scale, l1, l2 = _prologue(ctx)
    b1, b2, eps, wd = (float(a[k]) for k in ("beta1", "beta2", "epsilon", "weight_decay"))
    sum_squares = _SUM_SQUARES.setdefault(launch.threads, _sum_squares_kernel(launch.threads))
    n = int(np.prod(ctx.in_descs[0].shape))
    adam, norms, zeros = cuda.device_array(n, ctx.in_descs[0].dtype.np), cuda.device_array(2, np.float64), np.zeros(2)

    def run(ins, outs, stream=0):
        w, diff, m, v, b1t, b2t, lr = ins
        launch1(_lamb_betas, 1, 1, stream, b1t, b2t, b1, b2)
        launch1(_lamb_moments, n, launch.threads, stream, flat(w), flat(diff), flat(m), flat(v), b1t, b2t, adam,
                scale, l1, l2, b1, b2, eps)
        norms.copy_to_device(zeros, stream=stream)
        grid = blocks(n, launch.threads, launch.max_blocks)
        sum_squares[grid, launch.threads, stream](flat(w), norms[0:1])
        sum_squares[grid, launch.threads, stream](adam, norms[1:2])
        launch1(_lamb_apply, n, launch.threads, stream, flat(w), adam, norms, lr, wd)

    return run


_learning_rate_dev = cuda.jit(device=True)(_learning_rate.py_func)  # the CPU kernel's arithmetic, line by line


@cuda.jit
def _lr_act(train_step, out, base, warmup_kind, warmup_batches, warmup_param, decay_kind, p0, p1, p2, p3,
            boundaries, values):
    if cuda.grid(1) == 0:
        out[0] = _learning_rate_dev(train_step[0], base, warmup_kind, warmup_batches, warmup_param, decay_kind, p0,
                                    p1, p2, p3, boundaries, values)


@register_kernel("learning_rate_schedule", "numba", "gpu")
def _lr(ctx: KernelCtx):
    constants = schedule_constants(ctx.attrs["learning_rate"], ctx.attrs["decay"], ctx.attrs["warmup"])
    if constants is None:
        raise ValueError(f"op {ctx.op.name!r} (learning_rate_schedule): no CUDA kernel for the schedule "
                         f"decay={ctx.attrs['decay']!r}, warmup={ctx.attrs['warmup']!r}; OneFlow runs this op on "
                         "the CPU, place it there")
    *scalars, boundaries, values = constants
    tables = (cuda.to_device(np.array(boundaries, np.float64)), cuda.to_device(np.array(values, np.float64)))

    def run(ins, outs, stream=0):
        _lr_act[1, 1, stream](ins[0], outs[0], *scalars, *tables)

    return run
