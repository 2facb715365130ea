"""A register-blocked GEMM micro-kernel in explicit vectors of the target's width, for Winograd's many small GEMMs
(winograd.py: 64 GEMMs a chunk of about [128 x 32] x [32 x 64] at LeNet's conv2).

Why not BLAS: OpenBLAS ran those GEMMs at 64 GFLOP/s on this AVX-512 Xeon (its per-call packing and dispatch on
an inner dimension of 32) against 130 for a large SGEMM. Why not a Numba loop: LLVM vectorizes a Numba loop for
this CPU 256 bits wide (the target's prefer-256-bit tuning) and keeps an output row in memory, not registers.
Here an LLVM intrinsic builds the block itself: ``MR`` rows x ``NV`` vectors of C in registers, each step of the
inner dimension one load per vector of B, one broadcast per row of A and MR * NV fused multiply-adds.

The summation order is fixed: each C value is the FMA chain over k in order from zero, then (``beta``) added to
the C it overwrites; the same on every executor (the kernel is the same code in the protocol, replay and fused
paths). A block is ``nr(dtype)`` columns wide, and the callers pad their column counts to it.

The block fits the register file of the CPU Numba compiles for (``target_vector_bytes``: its CPU name and features
as Numba's codegen takes them, so ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` count): with AVX-512, 8 rows x 2 zmm
(8 x 32 float32) in 16 of its 32 registers; with 32-byte vectors (AVX2) or narrower, 6 rows x 2 vectors (6 x 16
float32 on AVX2, the shape of BLIS's Haswell SGEMM kernel) in 12 of 16 registers, beside the 2 loads of B and the
broadcast of A. The AVX-512 block built for AVX2 took 32 ymm accumulators and spilled 20 of them to the stack every
step of k (inspect_asm).
"""

from __future__ import annotations

import functools

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._numba import compile_target, njit


@functools.cache
def target_vector_bytes() -> int:
    """The widest vector register of the CPU Numba compiles for, in bytes (64 with AVX-512, 32 with AVX/AVX2,
    else 16): the CPU name and features are Numba's (codegen.JITCPUCodegen: NUMBA_CPU_NAME / NUMBA_CPU_FEATURES,
    else the host's), and LLVM itself says which registers a 64-byte vector add gets there. A named CPU with no
    features (NUMBA_CPU_FEATURES="") takes that CPU's own, which only LLVM knows."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    name, features = compile_target()
    machine = llvm.Target.from_default_triple().create_target_machine(cpu=name, features=features)
    probe = llvm.parse_assembly("define void @f(ptr %p) {\n %v = load <16 x float>, ptr %p\n"
                                " %w = fadd <16 x float> %v, %v\n store <16 x float> %w, ptr %p\n ret void\n}")
    asm = machine.emit_assembly(probe)
    return 64 if "zmm" in asm else 32 if "ymm" in asm else 16


VECTOR_BYTES = target_vector_bytes()
# rows of a block, and vectors of a block's row: MR * NV accumulators, MR broadcasts and NV loads per MR * NV FMAs
MR, NV = (8, 2) if VECTOR_BYTES == 64 else (6, 2)


def nr(dtype: np.dtype) -> int:
    """A block's columns: NV vectors of VECTOR_BYTES."""
    return NV * VECTOR_BYTES // np.dtype(dtype).itemsize


def pad_cols(n: int, dtype: np.dtype) -> int:
    """n rounded up to whole blocks."""
    w = nr(dtype)
    return -(-n // w) * w


def _ptr(context, builder, array_type, array, offset):
    data = context.make_array(array_type)(context, builder, array).data
    return builder.gep(data, [offset])


@intrinsic
def block(typingctx, c, c0, ldc, a, a0, ars, aks, b, b0, ldb, k, mr, beta):
    """C[r, j] = sum_{kk < k} A[r, kk] * B[kk, j] (+ C[r, j] if beta) for r < mr <= MR, j < nr: A[r, kk] at
    a[a0 + r * ars + kk * aks], B[kk, j] at b[b0 + kk * ldb + j], C[r, j] at c[c0 + r * ldc + j]. Rows from mr
    on are neither read nor written (their A offsets are clamped to row mr - 1, their sums dropped)."""
    if not all(isinstance(t, types.Array) and t.dtype in (types.float32, types.float64) for t in (c, a, b)) or \
            len({c.dtype, a.dtype, b.dtype}) != 1:
        raise TypeError(f"microgemm.block: c, a, b must be float32 or float64 arrays of one dtype, got {c}, {a}, {b}")
    sig = types.void(c, types.intp, types.intp, a, types.intp, types.intp, types.intp, b, types.intp, types.intp,
                     types.intp, types.intp, types.boolean)

    def codegen(context, builder, sig, args):
        c_t, _, _, a_t, _, _, _, b_t = sig.args[:8]
        cv, c0v, ldcv, av, a0v, arsv, aksv, bv, b0v, ldbv, kv, mrv, betav = args
        ft = context.get_data_type(c_t.dtype)
        bits = 32 if c_t.dtype == types.float32 else 64
        lanes = VECTOR_BYTES * 8 // bits
        vt = ir.VectorType(ft, lanes)
        i32 = ir.IntType(32)
        intp = c0v.type
        zero = ir.Constant(vt, [0.0] * lanes)
        accs = [[cgutils.alloca_once_value(builder, zero) for _ in range(NV)] for _ in range(MR)]
        one = ir.Constant(intp, 1)
        last = builder.sub(mrv, one)
        a_rows = []  # each row's A offset, clamped to the last live row
        for r in range(MR):
            rr = ir.Constant(intp, r)
            row = builder.select(builder.icmp_signed("<", rr, mrv), rr, last)
            a_rows.append(builder.add(a0v, builder.mul(row, arsv)))
        shuffle_zero = ir.Constant(ir.VectorType(i32, lanes), [0] * lanes)
        # llvm.fma on vectors (IRBuilder.fma and declare_intrinsic take scalars only)
        name = f"llvm.fma.v{lanes}f{bits}"
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]), name)
        with cgutils.for_range(builder, kv) as loop:
            kk = loop.index
            brow = builder.add(b0v, builder.mul(kk, ldbv))
            bvec = [builder.load(builder.bitcast(_ptr(context, builder, b_t, bv,
                                                      builder.add(brow, ir.Constant(intp, v * lanes))),
                                                 vt.as_pointer()), align=4) for v in range(NV)]
            koff = builder.mul(kk, aksv)
            for r in range(MR):
                s = builder.load(_ptr(context, builder, a_t, av, builder.add(a_rows[r], koff)))
                one_lane = builder.insert_element(ir.Constant(vt, ir.Undefined), s, ir.Constant(i32, 0))
                splat = builder.shuffle_vector(one_lane, one_lane, shuffle_zero)
                for v in range(NV):
                    builder.store(builder.call(fma, [splat, bvec[v], builder.load(accs[r][v])]), accs[r][v])
        for r in range(MR):
            with builder.if_then(builder.icmp_signed("<", ir.Constant(intp, r), mrv)):
                crow = builder.add(c0v, builder.mul(ir.Constant(intp, r), ldcv))
                for v in range(NV):
                    at = builder.add(crow, ir.Constant(intp, v * lanes))
                    p = builder.bitcast(_ptr(context, builder, c_t, cv, at), vt.as_pointer())
                    acc = builder.load(accs[r][v])
                    with builder.if_else(betav) as (then, otherwise):
                        with then:
                            builder.store(builder.fadd(acc, builder.load(p, align=4)), p, align=4)
                        with otherwise:
                            builder.store(acc, p, align=4)
        return context.get_dummy_value()

    return sig, codegen


@njit
def gemm_blocked(ta, m, n, k, a, a0, lda, b, b0, ldb, beta, c, c0, ldc):
    """Row-major C[m, n] = op(A) B (+ C if beta) by blocks of MR rows x nr columns; n must be a multiple of nr
    (the callers pad their columns). op(A) = A (m x k, row stride lda) or, with ta, A^T for A (k x m)."""
    w = NV * VECTOR_BYTES // c.itemsize
    ars, aks = (1, lda) if ta else (lda, 1)
    for i in range(0, m, MR):
        mr = min(MR, m - i)
        for j in range(0, n, w):
            block(c, c0 + i * ldc + j, ldc, a, a0 + i * ars, ars, aks, b, b0 + j, ldb, k, mr, beta)
