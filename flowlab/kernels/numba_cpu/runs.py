"""Short contiguous runs copied or added in 8-wide vector moves: the inner step of conv.py's im2col and col2im.

A convolution's im2col is tens of thousands of runs one output row long (14 values at LeNet's conv2, 28 at
conv1). LLVM vectorizes a Numba copy loop 8 wide x 4 interleaved, so a loop shorter than 32 never enters its
vector body and goes element by element. Here a run is whole 8-value vectors, and its tail one more vector ending
at the run's end, overlapping the one before: a copy writes the overlap twice with the same values. An add loads
both overlapping vectors before it stores either (a load of values just stored by an overlapping store would
wait for the store to complete), and the tail keeps its first lanes as they were, so each element is summed
once, as `dst[i] += src[i]` does: the results are bit for bit the scalar loop's. Copying runs of 14 values
measured 3x faster than the scalar loop, of 28 1.4x. Runs shorter than 8 values go element by element.

The helpers are inlined into the caller at Numba's level (``inline="always"``): as calls, their array arguments
cost more than the copy. The caller guarantees the ranges (no bounds checks, as in every flowlab kernel) and that
src and dst do not overlap.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._numba import njit

LANES = 8


def _check(dst, src) -> None:
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.dtype == src.dtype
            and dst.dtype in (types.float32, types.float64)):
        raise TypeError(f"runs: dst and src must be float32 or float64 arrays of one dtype, got {dst} and {src}")


def _vector_at(context, builder, array_type, array, offset):
    """A pointer to the 8-value vector starting at array[offset]."""
    data = context.make_array(array_type)(context, builder, array).data
    vec = ir.VectorType(context.get_data_type(array_type.dtype), LANES)
    return builder.bitcast(builder.gep(data, [offset]), vec.as_pointer())


@intrinsic
def _copy8(typingctx, dst, d0, src, s0):
    """dst[d0:d0+8] = src[s0:s0+8]."""
    _check(dst, src)

    def codegen(context, builder, sig, args):
        dp = _vector_at(context, builder, sig.args[0], args[0], args[1])
        sp = _vector_at(context, builder, sig.args[2], args[2], args[3])
        builder.store(builder.load(sp, align=1), dp, align=1)
        return context.get_dummy_value()

    return types.void(dst, types.intp, src, types.intp), codegen


@intrinsic
def _add8(typingctx, dst, d0, src, s0):
    """dst[d0:d0+8] += src[s0:s0+8]."""
    _check(dst, src)

    def codegen(context, builder, sig, args):
        dp = _vector_at(context, builder, sig.args[0], args[0], args[1])
        sp = _vector_at(context, builder, sig.args[2], args[2], args[3])
        builder.store(builder.fadd(builder.load(dp, align=1), builder.load(sp, align=1)), dp, align=1)
        return context.get_dummy_value()

    return types.void(dst, types.intp, src, types.intp), codegen


@intrinsic
def _add_pair(typingctx, dst, d0, src, s0, n):
    """dst[d0:d0+n] += src[s0:s0+n] for 8 <= n <= 16: a head vector at 0 and a tail vector ending at n, both
    loaded before either is stored; the tail's lanes below 16 - n (the head's) are stored unchanged, then the
    head's store writes their sums over them."""
    _check(dst, src)

    def codegen(context, builder, sig, args):
        dst_t, _, src_t, _, _ = sig.args
        dst_a, d0, src_a, s0, n = args
        back = builder.sub(n, ir.Constant(n.type, LANES))
        head_d, tail_d = (_vector_at(context, builder, dst_t, dst_a, off) for off in (d0, builder.add(d0, back)))
        head_s, tail_s = (_vector_at(context, builder, src_t, src_a, off) for off in (s0, builder.add(s0, back)))
        head = builder.fadd(builder.load(head_d, align=1), builder.load(head_s, align=1))
        old_tail = builder.load(tail_d, align=1)
        tail = builder.fadd(old_tail, builder.load(tail_s, align=1))
        # lane i of the tail is element back + i: the head has it when back + i < 8
        lane_t = ir.VectorType(n.type, LANES)
        lanes = ir.Constant(lane_t, list(range(LANES)))
        first = builder.sub(ir.Constant(n.type, LANES), back)
        splat = builder.insert_element(ir.Constant(lane_t, ir.Undefined), first, ir.Constant(ir.IntType(32), 0))
        splat = builder.shuffle_vector(splat, splat, ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES))
        builder.store(builder.select(builder.icmp_signed(">=", lanes, splat), tail, old_tail), tail_d, align=1)
        builder.store(head, head_d, align=1)
        return context.get_dummy_value()

    return types.void(dst, types.intp, src, types.intp, types.intp), codegen


@njit(inline="always")
def copy_run(dst, d0, src, s0, n):
    """dst[d0:d0+n] = src[s0:s0+n] (flat arrays of one dtype)."""
    if n < LANES:
        for j in range(n):
            dst[d0 + j] = src[s0 + j]
    else:
        for j in range(n // LANES):
            _copy8(dst, d0 + j * LANES, src, s0 + j * LANES)
        if n % LANES:  # the last vector ends at the run's end; its first lanes rewrite values already copied
            _copy8(dst, d0 + n - LANES, src, s0 + n - LANES)


@njit(inline="always")
def add_run(dst, d0, src, s0, n):
    """dst[d0:d0+n] += src[s0:s0+n] (flat arrays of one dtype), each element summed once."""
    if n < LANES:
        for j in range(n):
            dst[d0 + j] += src[s0 + j]
    elif n % LANES == 0:
        for j in range(n // LANES):
            _add8(dst, d0 + j * LANES, src, s0 + j * LANES)
    else:
        full = n // LANES - 1  # whole vectors before the last, partial pair
        for j in range(full):
            _add8(dst, d0 + j * LANES, src, s0 + j * LANES)
        _add_pair(dst, d0 + full * LANES, src, s0 + full * LANES, n - full * LANES)
