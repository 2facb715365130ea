"""Numba CPU kernels of the random ops (see kernels/reference/random.py): the same seeded uniform draws (NumPy's
generator, as dropout's Numba kernel), turned into the mask / the 0-1 values by an njit loop."""

from __future__ import annotations

import numpy as np

from ..reference.random import op_stream
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit
from .array import copy_flat


@njit
def _below(draws, p, out):
    draws, p, out = draws.ravel(), p.ravel(), out.ravel()
    for i in range(out.size):
        out[i] = 1 if draws[i] < p[i] else 0


@register_kernel("bernoulli", "numba")
def _bernoulli_f(ctx: KernelCtx) -> KernelFn:
    rng = op_stream(ctx)
    return lambda ins, outs: _below(rng.random(ins[0].shape), ins[0], outs[0])


@register_kernel("generate_random_batch_permutation_indices", "numba")
def _permutation_f(ctx: KernelCtx) -> KernelFn:
    rng, n = op_stream(ctx), ctx.out_descs[0].shape[0]
    return lambda ins, outs: copy_flat(rng.permutation(n).astype(np.int32), outs[0])
