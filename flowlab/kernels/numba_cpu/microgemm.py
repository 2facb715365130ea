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

from . import transpose
from ._numba import compile_target, njit
from .transpose import lanes


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


def _block(nv: int):
    """The block intrinsic nv vectors wide: NV for whole blocks, 1 for a row's last vector (gemm_blocked)."""
    def typer(typingctx, c, c0, ldc, a, a0, ars, aks, b, b0, ldb, k, mr, beta):
        return _block_typer(nv, typingctx, c, c0, ldc, a, a0, ars, aks, b, b0, ldb, k, mr, beta)

    typer.__name__ = typer.__qualname__ = f"block{nv}"
    return intrinsic(typer)


def _block_typer(nv, typingctx, c, c0, ldc, a, a0, ars, aks, b, b0, ldb, k, mr, beta):
    """C[r, j] = sum_{kk < k} A[r, kk] * B[kk, j] (+ C[r, j] if beta) for r < mr <= MR, j < nv vectors: A[r, kk] at
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
        accs = [[cgutils.alloca_once_value(builder, zero) for _ in range(nv)] for _ in range(MR)]
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
                                                 vt.as_pointer()), align=4) for v in range(nv)]
            koff = builder.mul(kk, aksv)
            for r in range(MR):
                s = builder.load(_ptr(context, builder, a_t, av, builder.add(a_rows[r], koff)))
                one_lane = builder.insert_element(ir.Constant(vt, ir.Undefined), s, ir.Constant(i32, 0))
                splat = builder.shuffle_vector(one_lane, one_lane, shuffle_zero)
                for v in range(nv):
                    builder.store(builder.call(fma, [splat, bvec[v], builder.load(accs[r][v])]), accs[r][v])
        for r in range(MR):
            with builder.if_then(builder.icmp_signed("<", ir.Constant(intp, r), mrv)):
                crow = builder.add(c0v, builder.mul(ir.Constant(intp, r), ldcv))
                for v in range(nv):
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


block, block_one = _block(NV), _block(1)


@njit
def gemm_blocked(ta, m, n, k, a, a0, lda, b, b0, ldb, beta, c, c0, ldc):
    """Row-major C[m, n] = op(A) B (+ C if beta) by blocks of MR rows x nr columns; n must be a multiple of one
    vector (the callers pad their columns), a last half block one vector wide. op(A) = A (m x k, row stride lda)
    or, with ta, A^T for A (k x m)."""
    w = NV * VECTOR_BYTES // c.itemsize
    whole = n - n % w
    ars, aks = (1, lda) if ta else (lda, 1)
    for i in range(0, m, MR):
        mr = min(MR, m - i)
        for j in range(0, whole, w):
            block(c, c0 + i * ldc + j, ldc, a, a0 + i * ars, ars, aks, b, b0 + j, ldb, k, mr, beta)
        if whole < n:
            block_one(c, c0 + i * ldc + whole, ldc, a, a0 + i * ars, ars, aks, b, b0 + whole, ldb, k, mr, beta)


def aligned(size: int, dtype: np.dtype) -> np.ndarray:
    """Zeros whose data starts on a 64-byte line: the vector loads of a block's B from a buffer a few bytes off a
    line straddle two lines each, and took the MLP's forward GEMM (gemm_nt, 100 x 784 x 512) 610 us, not 520."""
    item = np.dtype(dtype).itemsize
    raw = np.zeros(size + 64 // item, dtype)
    start = (-raw.ctypes.data % 64) // item
    return raw[start:start + size]


def nt_scratch(m: int, k: int, n: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """gemm_nt's buffers for out[m, n] = a[m, k] b[n, k]^T: a^T packed in panels, the product transposed (n rows
    of m rounded up to a vector), and the block transposes' offsets (transpose.block)."""
    v = VECTOR_BYTES // np.dtype(dtype).itemsize
    mp, side = -(-m // v) * v, np.arange(lanes(dtype))
    offsets = np.stack([side * k, side * NV * v, side * v, side * mp, side * n]).astype(np.intp)
    return aligned(mp * k, dtype), aligned(n * mp, dtype).reshape(n, mp), offsets


@njit
def gemm_nt(a, b, out, packed, product, offsets):
    """out[m, n] = a[m, k] @ b[n, k]^T (a dense layer's x W^T) by blocks whose A is b's rows as they lie, unpacked:
    BLAS packs the bigger b (the weight) on every call, 180 of its 610 us at the MLP's 100 x 784 x 512. a^T (the
    small operand) goes in panels of nr columns, each row of one panel contiguous and on a 64-byte line (a last
    panel one vector wide); the product, n x mp, is transposed into out. Sums as gemm_blocked's: the FMA chain
    over k in order, the same on every executor."""
    m, k, n, mp = a.shape[0], a.shape[1], b.shape[0], product.shape[1]
    v = VECTOR_BYTES // a.itemsize
    w, side = NV * v, offsets.shape[1]
    fa, fp, fb = a.reshape(a.size), packed.reshape(packed.size), b.reshape(b.size)
    fc, fo = product.reshape(product.size), out.reshape(out.size)
    m_blocks, k_blocks = m - m % side, k - k % side
    for i0 in range(0, m, side):  # a^T into the panels: block transposes where a block lies in one panel
        p = i0 - i0 % w
        wp = min(w, mp - p)
        whole = i0 < m_blocks and i0 - p + side <= wp
        for kk in range(0, k_blocks if whole else 0, side):
            transpose.block(fa, i0 * k + kk, offsets[0], fp, p * k + kk * wp + i0 - p, offsets[1 if wp == w else 2])
        for i in range(i0, min(i0 + side, m)):
            for kk in range(k_blocks if whole else 0, k):
                fp[p * k + kk * wp + i - p] = fa[i * k + kk]
    for r in range(0, n, MR):
        mr = min(MR, n - r)
        for p in range(0, mp - mp % w, w):
            block(fc, r * mp + p, mp, fb, r * k, k, 1, fp, p * k, w, k, mr, False)
        if mp % w:
            block_one(fc, r * mp + mp - v, mp, fb, r * k, k, 1, fp, (mp - v) * k, v, k, mr, False)
    n_blocks = n - n % side
    for i in range(0, m_blocks, side):
        for j in range(0, n_blocks, side):
            transpose.block(fc, j * mp + i, offsets[3], fo, i * n + j, offsets[4])
    for i in range(m):
        for j in range(n_blocks if i < m_blocks else 0, n):
            fo[i * n + j] = fc[j * mp + i]
