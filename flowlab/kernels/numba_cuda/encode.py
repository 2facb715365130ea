"""CategoricalOrdinalEncode on the GPU: the keys and the table read back, the Numba CPU kernel run on the host
(kernels/numba_cpu/encode.py; the probing is sequential), the results copied back."""

from __future__ import annotations

import numpy as np

from ..numba_cpu.encode import encode_on_host
from ..registry import KernelCtx, register_kernel
from ._cuda import read_back


@register_kernel("CategoricalOrdinalEncode", "numba", "gpu")
def _encode_f(ctx: KernelCtx):
    capacity = ctx.in_descs[1].shape[0] // 2

    def run(ins, outs, stream=0):
        keys, table, size = (read_back(a, stream) for a in ins)
        out = np.empty(outs[0].shape, outs[0].dtype)
        encode_on_host(capacity, keys, table, size, out)
        for device, host in zip(outs, (out, table, size)):
            device.copy_to_device(host, stream=stream)

    return run
