"""CategoricalOrdinalEncode (ops/encode_ops.py), the reference: OneFlow's CPU kernel loop, key by key, on copies of
the table and size that the op returns. Slots are (key, value) pairs probed linearly from ``key mod capacity``
(the key as an unsigned 64-bit number, as the kernel's size_t cast); an empty slot has key 0."""

from __future__ import annotations

from ..registry import KernelCtx, KernelFn, register_kernel

_WRAP = 2**64


def table_full(capacity: int) -> RuntimeError:
    return RuntimeError(f"CategoricalOrdinalEncode: the table of {capacity} slots is full; give the encoder a larger "
                        "capacity (OneFlow's kernel CHECK-fails here)")


@register_kernel("CategoricalOrdinalEncode", "reference")
def _encode(ctx: KernelCtx) -> KernelFn:
    capacity = ctx.in_descs[1].shape[0] // 2

    def kernel(ins, outs):
        keys, out, table, size = ins[0].reshape(-1), outs[0].reshape(-1), outs[1], outs[2]
        table[...] = ins[1]
        size[...] = ins[2]
        pairs = table.reshape(capacity, 2)
        for i, h in enumerate(keys.tolist()):
            start = h % _WRAP
            for count in range(capacity):
                slot = ((start + count) % _WRAP) % capacity
                if pairs[slot, 0] == h:
                    out[i] = pairs[slot, 1]
                    break
                if pairs[slot, 0] == 0:
                    size[0] += 1
                    pairs[slot] = (h, size[0])
                    out[i] = size[0]
                    break
            else:
                raise table_full(capacity)

    return kernel

