"""CategoricalOrdinalEncode's Numba kernel (see kernels/reference/encode.py); the CUDA kernel runs it on the host."""

from __future__ import annotations

import numpy as np

from ..reference.encode import table_full
from ..registry import KernelCtx, KernelFn, register_kernel
from ._numba import njit


@njit
def encode(keys, table, size, out):
    # table (capacity, 2) and size (1,) already hold the input state; returns False when the table is full
    capacity = table.shape[0]
    for i in range(keys.size):
        h = keys[i]
        start = np.uint64(h)  # the kernel's size_t cast: a negative key wraps
        found = False
        for count in range(capacity):
            slot = (start + np.uint64(count)) % np.uint64(capacity)
            if table[slot, 0] == h:
                out[i] = table[slot, 1]
                found = True
                break
            if table[slot, 0] == 0:
                size[0] += 1
                table[slot, 0] = h
                table[slot, 1] = size[0]
                out[i] = size[0]
                found = True
                break
        if not found:
            return False
    return True


def encode_on_host(capacity: int, keys: np.ndarray, table: np.ndarray, size: np.ndarray, out: np.ndarray) -> None:
    if not encode(keys.reshape(-1), table.reshape(capacity, 2), size, out.reshape(-1)):
        raise table_full(capacity)


@register_kernel("CategoricalOrdinalEncode", "numba")
def _encode_f(ctx: KernelCtx) -> KernelFn:
    capacity = ctx.in_descs[1].shape[0] // 2

    def kernel(ins, outs):
        outs[1][...] = ins[1]
        outs[2][...] = ins[2]
        encode_on_host(capacity, ins[0], outs[1], outs[2], outs[0])

    return kernel
