"""Numba kernels of the small per-step training ops: the learning-rate schedule and the train step's assign.

They cost a microsecond each, but as Python kernels they split a replayed train step's fused segment in two
(replay/fused.py); as Numba functions the whole step fuses. ``_learning_rate`` mirrors
``kernels.reference.optimizer.learning_rate`` line by line (same float64 arithmetic), and the tests compare the
two on every schedule, with and without warmup, across the boundaries.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..reference.optimizer import _assign as _assign_reference
from ..reference.optimizer import _lr as _lr_reference
from ..registry import FusedCall, KernelCtx, KernelFn, fusable, register_kernel
from ._numba import njit
from .array import copy_flat

WARMUPS = {"linear": 1, "constant": 2}
DECAYS = {"piecewise_constant": 1, "polynomial": 2, "cosine": 3, "linear_cosine": 4, "exponential": 5,
          "inverse_time": 6, "natural_exp": 7, "piecewise_scaling": 8}


@njit
def _learning_rate(step, base, warmup_kind, warmup_batches, warmup_param, decay_kind, p0, p1, p2, p3,
                   boundaries, values):
    # warmup_param: linear's start_multiplier or constant's multiplier. p0..p3 by decay kind: polynomial
    # (decay_batches, end_learning_rate, power, cycle), cosine (decay_batches, alpha), linear_cosine
    # (decay_batches, num_periods, alpha, beta), exponential / inverse_time / natural_exp (decay_batches,
    # decay_rate, staircase). boundaries: the piecewise ones', padded with inf to len(values); values: piecewise
    # constant's rates or piecewise scaling's scales. As OneFlow's kernel, the decay sees the global step.
    if warmup_kind != 0 and step < warmup_batches:
        if warmup_kind == 1:
            return base * (warmup_param + (1.0 - warmup_param) * (step / warmup_batches))
        return base * warmup_param
    if decay_kind == 0:
        return base
    if decay_kind == 1 or decay_kind == 8:
        for k in range(len(boundaries)):
            if step <= boundaries[k]:
                return values[k] if decay_kind == 1 else values[k] * base
        return values[len(values) - 1] if decay_kind == 1 else values[len(values) - 1] * base
    batches = p0
    if decay_kind >= 5:
        p = step / batches
        if p2 != 0.0:
            p = float(math.floor(p))
        if decay_kind == 5:
            return base * math.pow(p1, p)
        if decay_kind == 6:
            return base / (1.0 + p1 * p)
        return base * math.exp(-p1 * p)
    if decay_kind == 2:
        if p3 != 0.0:
            step = max(step, 1)  # OneFlow: step 0 decays as step 1
            batches = batches * math.ceil(step / batches)
        else:
            step = min(step, batches)
        return (base - p1) * (1 - step / batches) ** p2 + p1
    step = min(step, batches)
    if decay_kind == 3:
        return base * ((1 - p1) * 0.5 * (1 + math.cos(math.pi * step / batches)) + p1)
    linear = (batches - step) / batches
    cosine = 0.5 * (1 + math.cos(math.pi * 2 * p1 * step / batches))
    return base * ((p2 + linear) * cosine + p3)


@njit
def _learning_rate_act(train_step, out, base, warmup_kind, warmup_batches, warmup_param, decay_kind, p0, p1, p2,
                       p3, boundaries, values):
    out[0] = _learning_rate(train_step[0], base, warmup_kind, warmup_batches, warmup_param, decay_kind, p0, p1, p2,
                            p3, boundaries, values)


def schedule_constants(base: float, decay: dict[str, Any] | None, warmup: dict[str, Any] | None) -> tuple | None:
    """The schedule as ``_learning_rate``'s constant arguments; None for a schedule it does not know."""
    warmup_kind, warmup_batches, warmup_param = 0, 0, 0.0
    if warmup:
        if warmup["type"] not in WARMUPS:
            return None
        warmup_kind, warmup_batches = WARMUPS[warmup["type"]], int(warmup["warmup_batches"])
        warmup_param = float(warmup["start_multiplier" if warmup["type"] == "linear" else "multiplier"])
    kind = DECAYS.get(decay["type"]) if decay else 0
    if kind is None:
        return None
    # decay_batches stays an int, as in the reference: its step arithmetic is integer until the division
    params: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
    boundaries: tuple[float, ...] = (math.inf,)
    values: tuple[float, ...] = (float(base),)
    if kind in (1, 8):
        values = tuple(float(v) for v in decay["values" if kind == 1 else "scales"])
        padding = (math.inf,) * (len(values) - len(decay["boundaries"]))
        boundaries = tuple(float(b) for b in decay["boundaries"]) + padding
    elif kind == 2:
        params = (int(decay["decay_batches"]), float(decay["end_learning_rate"]), float(decay["power"]),
                  float(bool(decay["cycle"])))
    elif kind == 3:
        params = (int(decay["decay_batches"]), float(decay["alpha"]), 0.0, 0.0)
    elif kind == 4:
        params = (int(decay["decay_batches"]), float(decay["num_periods"]), float(decay["alpha"]),
                  float(decay["beta"]))
    elif kind in (5, 6, 7):
        params = (int(decay["decay_batches"]), float(decay["decay_rate"]), float(bool(decay["staircase"])), 0.0)
    base = float(np.float32(base))  # OneFlow's kernel reads the conf's learning_rate into a float
    return (base, warmup_kind, warmup_batches, warmup_param, kind, *params, boundaries, values)


@register_kernel("learning_rate_schedule", "numba")
def _lr(ctx: KernelCtx) -> KernelFn:
    constants = schedule_constants(ctx.attrs["learning_rate"], ctx.attrs["decay"], ctx.attrs["warmup"])
    if constants is None:
        return _lr_reference(ctx)

    def kernel(ins, outs):
        _learning_rate_act(ins[0], outs[0], *constants)

    return fusable(kernel, lambda ins, outs: FusedCall(_learning_rate_act, (ins[0], outs[0], *constants)))


@register_kernel("assign", "numba")
def _assign(ctx: KernelCtx) -> KernelFn:
    kernel = _assign_reference(ctx)  # the same act; what Numba adds is its fused form
    if ctx.in_descs[0].dtype != ctx.in_descs[1].dtype or ctx.in_descs[0].shape != ctx.in_descs[1].shape:
        return kernel
    return fusable(kernel, lambda ins, outs: FusedCall(copy_flat, (ins[1], ins[0])))
