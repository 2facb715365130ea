"""Reference kernels of the random ops (ops/random_ops.py): each kernel draws from its own PCG64 stream seeded by
the op's seed, a new draw on every act (kernels/tiered.py keeps these kernels out of tiering, which would restart
the stream). The Numba CPU kernels draw the same uniform numbers and compare them in a loop; the GPU kernels draw
on the host with these functions: every mode and device gives the same values."""

from __future__ import annotations

import numpy as np

from ..registry import KernelCtx, KernelFn, register_kernel


def op_stream(ctx: KernelCtx) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(ctx.attrs["seed"]))


def bernoulli_draw(ctx: KernelCtx):
    """bernoulli: 1 where a uniform draw in [0, 1) is below the probability (so p = 1 always gives 1, p = 0 never)."""
    rng, dtype = op_stream(ctx), ctx.out_descs[0].dtype.np
    return lambda ins: (rng.random(ins[0].shape) < ins[0]).astype(dtype)


def permutation_draw(ctx: KernelCtx):
    rng, n = op_stream(ctx), ctx.out_descs[0].shape[0]
    return lambda ins: rng.permutation(n).astype(np.int32)


DRAWS = {"bernoulli": bernoulli_draw,
         "generate_random_batch_permutation_indices": permutation_draw}


def _cpu(draw):
    def factory(ctx: KernelCtx) -> KernelFn:
        make = draw(ctx)

        def kernel(ins, outs):
            outs[0][...] = make(ins)

        return kernel

    return factory


for _op, _draw in DRAWS.items():
    register_kernel(_op, "reference")(_cpu(_draw))
