"""NumPy reference kernels of the training ops (updates write the variable in place). The Numba ones are in
kernels/numba_cpu/optimizer.py and schedule.py."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir.sbp import balanced_split
from ..checks import check_indices
from ..registry import KernelCtx, KernelFn, register_kernel


def effective_grad(ctx: KernelCtx):
    """The update ops' fused prologue (OneFlow's scale/l1/l2 attrs): g = scale * diff + l1 sign(w) + l2 w."""
    scale, l1, l2 = ctx.attrs["scale"], ctx.attrs["l1"], ctx.attrs["l2"]

    def grad(w: np.ndarray, diff: np.ndarray) -> np.ndarray:
        g = diff * scale if scale != 1.0 else diff
        if l1:
            g = g + l1 * np.sign(w)
        if l2:
            g = g + l2 * w
        return g

    return grad


@register_kernel("sgd_update", "reference")
def _sgd(ctx: KernelCtx) -> KernelFn:
    wd, grad = ctx.attrs["weight_decay"], effective_grad(ctx)

    def kernel(ins, outs):
        w, lr = ins[0], float(ins[2][0])
        g = grad(w, ins[1])
        if wd:
            w -= lr * wd * w
        w -= (lr * g).astype(w.dtype, copy=False)

    return kernel


@register_kernel("momentum_update", "reference")
def _momentum(ctx: KernelCtx) -> KernelFn:
    beta, wd, grad = ctx.attrs["beta"], ctx.attrs["weight_decay"], effective_grad(ctx)

    def kernel(ins, outs):
        w, v, lr = ins[0], ins[2], float(ins[3][0])
        g = grad(w, ins[1])
        decay = lr * wd * w if wd else 0.0  # MomentumUpdateFunctor: the decay is not in the momentum
        v *= beta
        v -= lr * g
        w += v
        w -= decay

    return kernel


@register_kernel("adam_update", "reference")
def _adam(ctx: KernelCtx) -> KernelFn:
    a = ctx.attrs
    b1, b2, eps, wd, correct = a["beta1"], a["beta2"], a["epsilon"], a["weight_decay"], a["do_bias_correction"]
    grad = effective_grad(ctx)

    def kernel(ins, outs):
        w, m, v, lr, step = ins[0], ins[2], ins[3], float(ins[4][0]), int(ins[5][0])
        g = grad(w, ins[1])
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * g * g
        if correct:  # OneFlow scales the rate by sqrt(1 - b2^t) / (1 - b1^t), t counted from 1
            t = step + 1
            lr = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
        w -= lr * (m / (np.sqrt(v) + eps) + wd * w)

    return kernel


def bias_corrected_lr(lr: float, step: int, b1: float, b2: float) -> float:
    """OneFlow's adam_bias_correction_learning_rate: lr sqrt(1 - b2^t) / (1 - b1^t), t = step + 1."""
    t = step + 1
    return lr * math.sqrt(1 - b2**t) / (1 - b1**t)


def table_rows(ctx: KernelCtx) -> tuple[int, int, int]:
    """(lower, rows, logical): this device holds rows [lower, lower + rows) of the ``logical_rows`` table (OneFlow's
    BalancedSplitter offset, the kernel's lower_bound); lower 0 where it holds the whole table."""
    rows = ctx.in_descs[0].shape[0]
    logical = ctx.attrs.get("logical_rows") or rows
    if rows == logical or ctx.parallel_num == 1:
        return 0, rows, rows
    parts = balanced_split(logical, ctx.parallel_num)
    if parts[ctx.parallel_id] != rows:
        raise ValueError(f"{ctx.op.op_type} {ctx.op.name!r}: device {ctx.parallel_id} of {ctx.parallel_num} holds "
                         f"{rows} of {logical} rows; its slice has {parts[ctx.parallel_id]}")
    return sum(parts[:ctx.parallel_id]), rows, logical


@register_kernel("indexed_slices_adam_update", "reference")
def _indexed_slices_adam(ctx: KernelCtx) -> KernelFn:
    a = ctx.attrs
    b1, b2, eps, wd, scale = a["beta1"], a["beta2"], a["epsilon"], a["weight_decay"], a["scale"]
    lower, rows, logical = table_rows(ctx)
    whole = (logical, *ctx.in_descs[0].shape[1:])

    def kernel(ins, outs):
        all_ids = ins[1].reshape(-1)
        check_indices(all_ids, logical, "index", 0, "model", whole)
        mine = (all_ids >= lower) & (all_ids < lower + rows)  # the other devices' rows are theirs to update
        ids = all_ids[mine] - lower
        lr = float(ins[3][0])
        if a["do_bias_correction"]:
            lr = bias_corrected_lr(lr, int(ins[6][0]), b1, b2)
        w, m, v = (x.reshape(rows, -1) for x in (ins[0], ins[4], ins[5]))
        # OneFlow sums the values of equal indices first (its unique step); rows not named stay as they are
        uniq, where = np.unique(ids, return_inverse=True)
        g = np.zeros((uniq.size, w.shape[1]), w.dtype)
        np.add.at(g, where, ins[2].reshape(all_ids.size, -1)[mine] * scale)
        m[uniq] = b1 * m[uniq] + (1 - b1) * g
        v[uniq] = b2 * v[uniq] + (1 - b2) * g * g
        w[uniq] -= lr * (m[uniq] / (np.sqrt(v[uniq]) + eps) + wd * w[uniq])

    return kernel


def indexed_rows(ctx: KernelCtx):
    """``rows_of(ins) -> (rows, g)``: the distinct ids of this device's rows (local) and their summed, scaled
    values, as OneFlow's indexed-slices kernels take them after its unique step."""
    lower, rows, logical = table_rows(ctx)
    whole, scale = (logical, *ctx.in_descs[0].shape[1:]), ctx.attrs["scale"]

    def rows_of(ins):
        all_ids = ins[1].reshape(-1)
        check_indices(all_ids, logical, "index", 0, "model", whole)
        mine = (all_ids >= lower) & (all_ids < lower + rows)
        uniq, where = np.unique(all_ids[mine] - lower, return_inverse=True)
        g = np.zeros((uniq.size, int(np.prod(whole[1:], dtype=np.int64))), ins[0].dtype)
        np.add.at(g, where, ins[2].reshape(all_ids.size, -1)[mine] * scale)
        return uniq, g

    return rows, rows_of


@register_kernel("indexed_slices_sgd_update", "reference")
def _indexed_slices_sgd(ctx: KernelCtx) -> KernelFn:
    (rows, rows_of), wd = indexed_rows(ctx), ctx.attrs["weight_decay"]

    def kernel(ins, outs):
        uniq, g = rows_of(ins)
        w, lr = ins[0].reshape(rows, -1), float(ins[3][0])
        w[uniq] -= lr * (g + wd * w[uniq])  # SGDUpdateFunctor

    return kernel


@register_kernel("indexed_slices_momentum_update", "reference")
def _indexed_slices_momentum(ctx: KernelCtx) -> KernelFn:
    (rows, rows_of), wd, beta = indexed_rows(ctx), ctx.attrs["weight_decay"], ctx.attrs["beta"]

    def kernel(ins, outs):
        uniq, g = rows_of(ins)
        w, mom, lr = ins[0].reshape(rows, -1), ins[4].reshape(rows, -1), float(ins[3][0])
        mom[uniq] = beta * mom[uniq] - lr * g  # MomentumUpdateFunctor: the decay is not in the momentum
        w[uniq] += mom[uniq] - lr * wd * w[uniq]

    return kernel


@register_kernel("lamb_update", "reference")
def _lamb(ctx: KernelCtx) -> KernelFn:
    a = ctx.attrs
    b1, b2, eps, wd, grad = a["beta1"], a["beta2"], a["epsilon"], a["weight_decay"], effective_grad(ctx)

    def kernel(ins, outs):
        w, m, v, b1t, b2t, lr = ins[0], ins[2], ins[3], ins[4], ins[5], float(ins[6][0])
        # OneFlow's LambUpdateKernelUtil: beta^t advanced before use (the slots start at beta: step 1 uses beta^2)
        b1t *= b1
        b2t *= b2
        g = grad(w, ins[1])
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * g * g
        adam = (m / (1 - b1t[0])) / np.sqrt(v / (1 - b2t[0]) + eps)
        w_norm, g_norm = math.sqrt(float(np.sum(w * w))), math.sqrt(float(np.sum(adam * adam)))
        trust = w_norm / g_norm if w_norm > 0 and g_norm > 0 else 1.0
        w -= lr * trust * (adam + wd * w)

    return kernel


@register_kernel("rmsprop_update", "reference")
def _rmsprop(ctx: KernelCtx) -> KernelFn:
    # OneFlow's RmsPropUpdateFunctor takes weight_decay and never uses it: no decay here either
    decay, eps = ctx.attrs["decay_rate"], ctx.attrs["epsilon"]
    grad = effective_grad(ctx)

    centered = ctx.attrs["centered"]

    def kernel(ins, outs):
        w, ms, lr = ins[0], ins[2], float(ins[3][0])
        g = grad(w, ins[1])
        ms *= decay
        ms += (1 - decay) * g * g
        denom = ms
        if centered:  # OneFlow's RmsPropUpdateFunctor: the variance about the running mean of the gradient
            mg = ins[4]
            mg *= decay
            mg += (1 - decay) * g
            denom = ms - mg * mg
        w -= lr * g / np.sqrt(denom + eps)

    return kernel


@register_kernel("assign", "reference")
def _assign(ctx: KernelCtx) -> KernelFn:
    def kernel(ins, outs):
        ins[0][...] = ins[1]

    return kernel


@register_kernel("clip_by_global_norm", "reference")
def _clip(ctx: KernelCtx) -> KernelFn:
    clip_norm = ctx.attrs["clip_norm"]

    def kernel(ins, outs):
        norm = math.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in ins))
        scale = clip_norm / max(norm, clip_norm)
        for g, out in zip(ins, outs):
            np.multiply(g, scale, out=out, casting="unsafe")

    return kernel


def learning_rate(base: float, step: int, decay: dict[str, Any] | None, warmup: dict[str, Any] | None) -> float:
    """OneFlow v0.3.4's learning_rate_schedule kernel (core/kernel/learning_rate_schedule_kernel.cpp): the warmup's
    rate while ``step < warmup_batches``, then the decay policy at the global ``step`` (the warmup steps count)."""
    lr = float(np.float32(base))  # the kernel reads the conf's learning_rate into a float
    if warmup and step < warmup["warmup_batches"]:
        if warmup["type"] == "linear":
            start = warmup["start_multiplier"]
            return lr * (start + (1.0 - start) * (step / warmup["warmup_batches"]))
        return lr * warmup["multiplier"]
    if not decay:
        return lr
    kind = decay["type"]
    if kind in ("piecewise_constant", "piecewise_scaling"):
        boundaries = decay["boundaries"]
        i = next((k for k, b in enumerate(boundaries) if step <= b), len(boundaries))
        return float(decay["values"][i]) if kind == "piecewise_constant" else decay["scales"][i] * lr
    if kind in ("exponential", "inverse_time", "natural_exp"):
        p, rate = step / decay["decay_batches"], decay["decay_rate"]
        if decay["staircase"]:
            p = float(math.floor(p))
        if kind == "exponential":
            return lr * math.pow(rate, p)
        return lr / (1.0 + rate * p) if kind == "inverse_time" else lr * math.exp(-rate * p)
    if kind == "polynomial":
        batches, end, power = decay["decay_batches"], decay["end_learning_rate"], decay["power"]
        if decay["cycle"]:
            step = max(step, 1)  # OneFlow: step 0 decays as step 1
            batches = batches * math.ceil(step / batches)
        else:
            step = min(step, batches)
        return (lr - end) * (1 - step / batches) ** power + end
    if kind == "cosine":
        batches, alpha = decay["decay_batches"], decay["alpha"]
        step = min(step, batches)
        return lr * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * step / batches)) + alpha)
    if kind == "linear_cosine":
        batches = decay["decay_batches"]
        step = min(step, batches)
        linear = (batches - step) / batches
        cosine = 0.5 * (1 + math.cos(math.pi * 2 * decay["num_periods"] * step / batches))
        return lr * ((decay["alpha"] + linear) * cosine + decay["beta"])
    raise ValueError(f"unknown learning-rate decay {kind!r}")


@register_kernel("learning_rate_schedule", "reference")
def _lr(ctx: KernelCtx) -> KernelFn:
    base, decay, warmup = ctx.attrs["learning_rate"], ctx.attrs["decay"], ctx.attrs["warmup"]

    def kernel(ins, outs):
        outs[0][0] = learning_rate(base, int(ins[0][0]), decay, warmup)

    return kernel
