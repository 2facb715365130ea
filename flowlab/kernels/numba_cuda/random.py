"""The random ops on the GPU: drawn on the host from the same seeded stream as the CPU kernels
(kernels/reference/random.py), then copied to the device (bernoulli reads its probabilities back first)."""

from __future__ import annotations

from ..reference.random import DRAWS
from ..registry import KernelCtx, register_kernel
from ._cuda import read_back


def _gpu(draw):
    def factory(ctx: KernelCtx):
        make = draw(ctx)
        reads = ctx.op.op_type == "bernoulli"

        def run(ins, outs, stream=0):
            host = make([read_back(ins[0], stream)] if reads else ins)
            outs[0].copy_to_device(host.reshape(outs[0].shape), stream=stream)

        return run

    return factory


for _op, _draw in DRAWS.items():
    register_kernel(_op, "numba", "gpu")(_gpu(_draw))
