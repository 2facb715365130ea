"""A square block transpose in registers, for Winograd's gathers and scatters between NCHW and its channels-last
tiles (winograd.py): a scalar transpose moved each value by itself at about 3 cycles a value.

``block(src, sbase, soff, dst, dbase, doff)`` loads L vectors of L values (L = 16 float32 or 8 float64: one
64-byte vector), the r-th at ``src[sbase + soff[r]:]``, and stores the block's c-th column as the vector at
``dst[dbase + doff[c]:]``. The transpose is log2(L) rounds over pairs of rows (i, i + 2^round), each an
interleave of chunks of 2^round values: within each 16-byte lane while the chunks are smaller than a lane (x86's
unpack instructions), then of whole lanes and half vectors (``network``). Written as plain LLVM
``shufflevector``s, each lowers to one instruction on AVX-512 (vunpck*, vpermt2ps) and on AVX2 (the vector split
into 32-byte halves: vunpck*, vperm2f128); a full interleave across the vector in every round instead cost 240
vpermps, 192 blends and spills for a float32 block on AVX2. A copy: the values are moved, never computed, so the
result is bit for bit the scalar loop's on any target.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

VECTOR_BYTES = 64


def lanes(dtype: np.dtype) -> int:
    """The block's side: values in one 64-byte vector."""
    return VECTOR_BYTES // np.dtype(dtype).itemsize


@functools.cache
def network(n: int) -> tuple[list[tuple[list[int], list[int]]], list[int]]:
    """The rounds' (low, high) shuffle masks for an n x n block (n // 4 values a 16-byte lane) and which column
    each resulting vector holds (found by running the rounds on the values' (row, column) labels)."""
    lane, rounds, g = n // 4, [], 1
    while g < n:
        if g < lane:  # within each lane: its first (last) half's chunks of a and b alternately
            lo, hi = ([src + base + half + c * g + k for base in range(0, n, lane) for c in range(lane // (2 * g))
                       for src in (0, n) for k in range(g)] for half in (0, lane // 2))
        else:  # chunks of g: a's even ones beside b's, then the odd ones
            lo, hi = ([src + c * g + k for c in range(odd, n // g, 2) for src in (0, n) for k in range(g)]
                      for odd in (0, 1))
        rounds.append((lo, hi))
        g *= 2
    rows = [[(r, c) for c in range(n)] for r in range(n)]
    for bit, (lo, hi) in enumerate(rounds):
        for i in (i for i in range(n) if not i & (1 << bit)):
            pair = rows[i] + rows[i | 1 << bit]
            rows[i], rows[i | 1 << bit] = [pair[k] for k in lo], [pair[k] for k in hi]
    assert all(v == [(r, v[0][1]) for r in range(n)] for v in rows), "not a transpose"
    return rounds, [v[0][1] for v in rows]


def _typed(src: types.Type, soff: types.Type, dst: types.Type, doff: types.Type, name: str) -> None:
    if not (isinstance(src, types.Array) and isinstance(dst, types.Array) and src.dtype == dst.dtype
            and src.dtype in (types.float32, types.float64) and isinstance(soff, types.Array)
            and isinstance(doff, types.Array) and soff.dtype == doff.dtype == types.int64):
        raise TypeError(f"transpose.{name}: float32 or float64 src and dst of one dtype and int64 offsets expected, "
                        f"got {src}, {dst}, {soff}, {doff}")


def _codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: list[ir.Value], fan: bool) -> ir.Value:
    """The loads, the rounds and the stores of ``block`` (``fan``: of ``fan``, a runtime loop over k destination
    sets around the L stores)."""
    src_t, _, off_t, dst_t = sig.args[:4]
    sv, sbase, soffv, dv, dbase, doffv = args[:6]
    n = VECTOR_BYTES // (4 if src_t.dtype == types.float32 else 8)
    vt = ir.VectorType(context.get_data_type(src_t.dtype), n)
    i32 = ir.IntType(32)

    def pointer(data: ir.Value, base: ir.Value, offs: ir.Value, k: ir.Value) -> ir.Value:
        return builder.bitcast(builder.gep(data, [builder.add(base, builder.load(builder.gep(offs, [k])))]),
                               vt.as_pointer())

    def data(array_t: types.Array, array: ir.Value) -> ir.Value:
        return context.make_array(array_t)(context, builder, array).data

    sdata, soffs = data(src_t, sv), data(off_t, soffv)
    rows = [builder.load(pointer(sdata, sbase, soffs, ir.Constant(sbase.type, k)), align=4) for k in range(n)]
    rounds, columns = network(n)
    for bit, masks in enumerate(rounds):
        lo, hi = (ir.Constant(ir.VectorType(i32, n), mask) for mask in masks)
        for i in (i for i in range(n) if not i & (1 << bit)):
            a, b = rows[i], rows[i | 1 << bit]
            rows[i], rows[i | 1 << bit] = builder.shuffle_vector(a, b, lo), builder.shuffle_vector(a, b, hi)
    ddata, doffs = data(dst_t, dv), data(off_t, doffv)
    if not fan:
        for v, col in zip(rows, columns):
            builder.store(v, pointer(ddata, dbase, doffs, ir.Constant(dbase.type, col)), align=4)
        return context.get_dummy_value()
    with cgutils.for_range(builder, args[6]) as loop:
        first = builder.mul(loop.index, ir.Constant(dbase.type, n))
        for v, col in zip(rows, columns):
            builder.store(v, pointer(ddata, dbase, doffs, builder.add(first, ir.Constant(dbase.type, col))), align=4)
    return context.get_dummy_value()


@intrinsic
def block(typingctx, src, sbase, soff, dst, dbase, doff):
    """dst[dbase + doff[c] + r] = src[sbase + soff[r] + c] for r, c < L (see the module's docstring)."""
    _typed(src, soff, dst, doff, "block")
    sig = types.void(src, types.intp, soff, dst, types.intp, doff)
    return sig, lambda context, builder, sig, args: _codegen(context, builder, sig, args, False)


@intrinsic
def fan(typingctx, src, sbase, soff, dst, dbase, doff, k):
    """``block`` storing each column to k places: dst[dbase + doff[e * L + c] + r] = src[sbase + soff[r] + c] for
    e < k (Winograd's gathers: a pixel's channels go to every tile that overlaps it, with no copy in between)."""
    _typed(src, soff, dst, doff, "fan")
    sig = types.void(src, types.intp, soff, dst, types.intp, doff, types.intp)
    return sig, lambda context, builder, sig, args: _codegen(context, builder, sig, args, True)
