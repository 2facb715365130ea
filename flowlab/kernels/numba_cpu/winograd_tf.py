"""Winograd's transforms (winograd.py) as vectorized passes: a transform's matrix L applied to rows of n values
(``_tf``: the 2-D ``L X L^T`` as two 1-D passes), and the encoding of L that the passes read (``terms``).

Each pass writes every output row as one expression over the input rows it needs, so the sums stay in registers
and the loop vectorizes over the n values (the tiles and channels of a chunk). A row's zero entries are skipped;
rows of the points p and -p come in pairs, computed as e + o and e - o from their half sum and half difference
(even and odd powers); F(4x4, 5x5)'s B^T and A^T, the hot ones, have whole-matrix passes that load each input
once (``_pairs8x8``, ``_pairs8x4``: the input transform 1.9 -> 1.6 ms, the output transform 2.8 -> 1.7 ms at
LeNet's conv2, against the row-by-row passes).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._numba import njit

BLOCK = 512  # values of a transform's vectors done at a time: 64 rows of 2 KB, tmp included, in L2
VECTOR_BYTES = 64  # the whole-matrix passes' explicit vectors: 16 float32 (LLVM picks 8 for a Numba loop here)


def _whole_matrix_pass(body, inputs: int = 8):
    """An intrinsic f(dst, d0, dstep, src, s0, step, coef, n) -> the count done: the pass over whole 64-byte
    vectors of the n values (the caller does the rest with its scalar loop), body(builder, xs, c) giving the
    output vectors (a row of the matrix each) from the ``inputs`` input vectors xs and c(k, j), coef[k, j] splat.
    Each output is the scalar loop's expression in its order (separate multiplies and adds, no FMA): the same bits."""

    @intrinsic
    def whole(typingctx, dst, d0, dstep, src, s0, step, coef, n):
        if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and isinstance(coef, types.Array)
                and dst.dtype == src.dtype == coef.dtype and dst.dtype in (types.float32, types.float64)):
            raise TypeError(f"winograd_tf: float32 or float64 arrays of one dtype expected, got {dst}, {src}, {coef}")

        def codegen(context, builder, sig, args):
            dst_t, _, _, src_t, _, _, coef_t, _ = sig.args
            dv, d0v, dstepv, sv, s0v, stepv, cv, nv = args
            ft = context.get_data_type(dst_t.dtype)
            lanes = VECTOR_BYTES // (4 if dst_t.dtype == types.float32 else 8)
            vt = ir.VectorType(ft, lanes)
            i32, intp = ir.IntType(32), nv.type
            zeros = ir.Constant(ir.VectorType(i32, lanes), [0] * lanes)
            coef_a = context.make_array(coef_t)(context, builder, cv)
            splats: dict[tuple[int, int], ir.Value] = {}

            def c(k: int, j: int) -> ir.Value:
                if (k, j) not in splats:
                    ptr = cgutils.get_item_pointer(context, builder, coef_t, coef_a,
                                                   [ir.Constant(intp, k), ir.Constant(intp, j)])
                    one = builder.insert_element(ir.Constant(vt, ir.Undefined), builder.load(ptr), ir.Constant(i32, 0))
                    splats[(k, j)] = builder.shuffle_vector(one, one, zeros)
                return splats[(k, j)]

            body(builder, None, c)  # the coefficients, splat before the loop
            dst_data = context.make_array(dst_t)(context, builder, dv).data
            src_data = context.make_array(src_t)(context, builder, sv).data
            count = builder.sdiv(nv, ir.Constant(intp, lanes))
            with cgutils.for_range(builder, count) as loop:
                off = builder.mul(loop.index, ir.Constant(intp, lanes))
                xs = [builder.load(builder.bitcast(builder.gep(src_data, [builder.add(builder.add(
                    s0v, builder.mul(ir.Constant(intp, j), stepv)), off)]), vt.as_pointer()), align=4)
                    for j in range(inputs)]
                for k, out in enumerate(body(builder, xs, c)):
                    row = builder.add(d0v, builder.mul(ir.Constant(intp, k), dstepv))
                    ptr = builder.gep(dst_data, [builder.add(row, off)])
                    builder.store(out, builder.bitcast(ptr, vt.as_pointer()), align=4)
            return builder.mul(count, ir.Constant(intp, lanes))

        return types.intp(dst, types.intp, types.intp, src, types.intp, types.intp, coef, types.intp), codegen

    return whole


def _lin(builder, terms):
    """sum of c * x over terms, left to right (as the scalar expression a0 * x0 + a1 * x1 + ...)."""
    acc = builder.fmul(terms[0][0], terms[0][1])
    for cv, xv in terms[1:]:
        acc = builder.fadd(acc, builder.fmul(cv, xv))
    return acc


def _body8x4(builder, xs, c):
    if xs is None:
        for k in range(4):
            for j in range(8):
                c(k, j)
        return []
    x0, v1, v2, v3, v4, v5, v6, x7 = xs
    parts = [x0, builder.fadd(v1, v2), builder.fsub(v1, v2), builder.fadd(v3, v4), builder.fsub(v3, v4),
             builder.fadd(v5, v6), builder.fsub(v5, v6), x7]
    return [_lin(builder, [(c(k, j), parts[j]) for j in range(8)]) for k in range(4)]


def _body8x8(builder, xs, c):
    if xs is None:
        for k, js in ((0, range(4)), (1, (0, 1, 2, 4, 5, 6)), (2, (0, 1, 2, 4, 5, 6)), (3, (0, 1, 2, 4, 5, 6)),
                      (4, range(4))):
            for j in js:
                c(k, j)
        return []
    x0, x1, x2, x3, x4, x5, x6, x7 = xs
    out = [_lin(builder, [(c(0, 0), x0), (c(0, 1), x2), (c(0, 2), x4), (c(0, 3), x6)])]
    for k in (1, 2, 3):
        e = _lin(builder, [(c(k, 0), x2), (c(k, 1), x4), (c(k, 2), x6)])
        o = _lin(builder, [(c(k, 4), x1), (c(k, 5), x3), (c(k, 6), x5)])
        out += [builder.fadd(e, o), builder.fsub(e, o)]
    return out + [_lin(builder, [(c(4, 0), x1), (c(4, 1), x3), (c(4, 2), x5), (c(4, 3), x7)])]


def _body4x8(builder, xs, c):
    if xs is None:
        for k, js in ((0, (0,)), (1, (0, 1, 4, 5)), (2, (0, 1, 4, 5)), (3, (0, 1, 4, 5)), (4, (0,))):
            for j in js:
                c(k, j)
        return []
    x0, x1, x2, x3 = xs
    out = [builder.fmul(c(0, 0), x0)]
    for k in (1, 2, 3):
        e = _lin(builder, [(c(k, 0), x0), (c(k, 1), x2)])
        o = _lin(builder, [(c(k, 4), x1), (c(k, 5), x3)])
        out += [builder.fadd(e, o), builder.fsub(e, o)]
    return out + [builder.fmul(c(4, 0), x3)]


_vec8x4 = _whole_matrix_pass(_body8x4)
_vec4x8 = _whole_matrix_pass(_body4x8, 4)
_vec8x8 = _whole_matrix_pass(_body8x8)


@njit
def _comb(dst, d0, src, s0, step, cols, coef, n):
    """dst[d0 + i] = sum_j coef[j] * src[s0 + cols[j] * step + i] for i < n over a matrix row's nonzero terms
    (cols[8] of them, padded to 2, 4 or 8 with zero terms): one expression, so the sum stays in registers."""
    cnt = cols[8]
    dv = dst[d0:]
    v0, v1 = src[s0 + cols[0] * step:], src[s0 + cols[1] * step:]
    c0, c1 = coef[0], coef[1]
    if cnt <= 2:
        for i in range(n):
            dv[i] = c0 * v0[i] + c1 * v1[i]
        return
    v2, v3 = src[s0 + cols[2] * step:], src[s0 + cols[3] * step:]
    c2, c3 = coef[2], coef[3]
    if cnt <= 4:
        for i in range(n):
            dv[i] = c0 * v0[i] + c1 * v1[i] + c2 * v2[i] + c3 * v3[i]
        return
    v4, v5, v6, v7 = (src[s0 + cols[4] * step:], src[s0 + cols[5] * step:], src[s0 + cols[6] * step:],
                      src[s0 + cols[7] * step:])
    c4, c5, c6, c7 = coef[4], coef[5], coef[6], coef[7]
    for i in range(n):
        dv[i] = (c0 * v0[i] + c1 * v1[i] + c2 * v2[i] + c3 * v3[i] + c4 * v4[i] + c5 * v5[i] + c6 * v6[i]
                 + c7 * v7[i])


@njit
def _comb_pair(dst, d0, d1, src, s0, step, cols, coef, n):
    """A pair of rows L[k] = E + O, L[k + 1] = E - O (the points p and -p: even powers alike, odd ones negated):
    e and o from their own few terms (cols[0:4], cols[4:8]; padded to 3 or 4), dst rows d0 = e + o, d1 = e - o."""
    de, do = dst[d0:], dst[d1:]
    e0, e1, e2 = src[s0 + cols[0] * step:], src[s0 + cols[1] * step:], src[s0 + cols[2] * step:]
    o0, o1, o2 = src[s0 + cols[4] * step:], src[s0 + cols[5] * step:], src[s0 + cols[6] * step:]
    a0, a1, a2, b0, b1, b2 = coef[0], coef[1], coef[2], coef[4], coef[5], coef[6]
    if cols[8] <= 3:
        for i in range(n):
            e = a0 * e0[i] + a1 * e1[i] + a2 * e2[i]
            o = b0 * o0[i] + b1 * o1[i] + b2 * o2[i]
            de[i] = e + o
            do[i] = e - o
        return
    e3, o3, a3, b3 = src[s0 + cols[3] * step:], src[s0 + cols[7] * step:], coef[3], coef[7]
    for i in range(n):
        e = a0 * e0[i] + a1 * e1[i] + a2 * e2[i] + a3 * e3[i]
        o = b0 * o0[i] + b1 * o1[i] + b2 * o2[i] + b3 * o3[i]
        de[i] = e + o
        do[i] = e - o


@njit
def _pairs8x4(dst, d0, dstep, src, s0, step, coef, n):
    """All four rows of a 4 x 8 matrix whose columns 1-2, 3-4, 5-6 are +/- pairs (A^T: the points p and -p give
    p^k and (-p)^k): the eight inputs loaded once, their pairs' sums and differences, then each row from those
    (coef[k] over x0, s1, d1, s2, d2, s3, d3, x7); a quarter of the loads of row by row."""
    v0, v1, v2, v3 = src[s0:], src[s0 + step:], src[s0 + 2 * step:], src[s0 + 3 * step:]
    v4, v5, v6, v7 = src[s0 + 4 * step:], src[s0 + 5 * step:], src[s0 + 6 * step:], src[s0 + 7 * step:]
    r0, r1, r2, r3 = dst[d0:], dst[d0 + dstep:], dst[d0 + 2 * dstep:], dst[d0 + 3 * dstep:]
    a0, a1, a2, a3, a4, a5, a6, a7 = coef[0, 0], coef[0, 1], coef[0, 2], coef[0, 3], coef[0, 4], coef[0, 5], \
        coef[0, 6], coef[0, 7]
    b0, b1, b2, b3, b4, b5, b6, b7 = coef[1, 0], coef[1, 1], coef[1, 2], coef[1, 3], coef[1, 4], coef[1, 5], \
        coef[1, 6], coef[1, 7]
    e0, e1, e2, e3, e4, e5, e6, e7 = coef[2, 0], coef[2, 1], coef[2, 2], coef[2, 3], coef[2, 4], coef[2, 5], \
        coef[2, 6], coef[2, 7]
    f0, f1, f2, f3, f4, f5, f6, f7 = coef[3, 0], coef[3, 1], coef[3, 2], coef[3, 3], coef[3, 4], coef[3, 5], \
        coef[3, 6], coef[3, 7]
    for i in range(_vec8x4(dst, d0, dstep, src, s0, step, coef, n), n):  # the rest after the whole vectors
        x0, x7 = v0[i], v7[i]
        s1, d1, s2, d2, s3, d3 = v1[i] + v2[i], v1[i] - v2[i], v3[i] + v4[i], v3[i] - v4[i], v5[i] + v6[i], \
            v5[i] - v6[i]
        r0[i] = a0 * x0 + a1 * s1 + a2 * d1 + a3 * s2 + a4 * d2 + a5 * s3 + a6 * d3 + a7 * x7
        r1[i] = b0 * x0 + b1 * s1 + b2 * d1 + b3 * s2 + b4 * d2 + b5 * s3 + b6 * d3 + b7 * x7
        r2[i] = e0 * x0 + e1 * s1 + e2 * d1 + e3 * s2 + e4 * d2 + e5 * s3 + e6 * d3 + e7 * x7
        r3[i] = f0 * x0 + f1 * s1 + f2 * d1 + f3 * s2 + f4 * d2 + f5 * s3 + f6 * d3 + f7 * x7


@njit
def _pairs8x8(dst, d0, dstep, src, s0, step, coef, n):
    """All eight rows of F(4x4, 5x5)'s B^T: row 0 over x0, x2, x4, x6; the +/- pairs of rows 1-2, 3-4, 5-6 as
    e +/- o, e over x2, x4, x6 and o over x1, x3, x5; row 7 over x1, x3, x5, x7 (coef rows in that order: row 0,
    the pairs' e and o coefficients, row 7). The eight inputs are loaded once."""
    v0, v1, v2, v3 = src[s0:], src[s0 + step:], src[s0 + 2 * step:], src[s0 + 3 * step:]
    v4, v5, v6, v7 = src[s0 + 4 * step:], src[s0 + 5 * step:], src[s0 + 6 * step:], src[s0 + 7 * step:]
    r0, r1, r2, r3 = dst[d0:], dst[d0 + dstep:], dst[d0 + 2 * dstep:], dst[d0 + 3 * dstep:]
    r4, r5, r6, r7 = dst[d0 + 4 * dstep:], dst[d0 + 5 * dstep:], dst[d0 + 6 * dstep:], dst[d0 + 7 * dstep:]
    a0, a2, a4, a6 = coef[0, 0], coef[0, 1], coef[0, 2], coef[0, 3]
    p2, p4, p6, p1, p3, p5 = coef[1, 0], coef[1, 1], coef[1, 2], coef[1, 4], coef[1, 5], coef[1, 6]
    q2, q4, q6, q1, q3, q5 = coef[2, 0], coef[2, 1], coef[2, 2], coef[2, 4], coef[2, 5], coef[2, 6]
    u2, u4, u6, u1, u3, u5 = coef[3, 0], coef[3, 1], coef[3, 2], coef[3, 4], coef[3, 5], coef[3, 6]
    z1, z3, z5, z7 = coef[4, 0], coef[4, 1], coef[4, 2], coef[4, 3]
    for i in range(_vec8x8(dst, d0, dstep, src, s0, step, coef, n), n):  # the rest after the whole vectors
        x0, x1, x2, x3, x4, x5, x6, x7 = v0[i], v1[i], v2[i], v3[i], v4[i], v5[i], v6[i], v7[i]
        r0[i] = a0 * x0 + a2 * x2 + a4 * x4 + a6 * x6
        e, o = p2 * x2 + p4 * x4 + p6 * x6, p1 * x1 + p3 * x3 + p5 * x5
        r1[i], r2[i] = e + o, e - o
        e, o = q2 * x2 + q4 * x4 + q6 * x6, q1 * x1 + q3 * x3 + q5 * x5
        r3[i], r4[i] = e + o, e - o
        e, o = u2 * x2 + u4 * x4 + u6 * x6, u1 * x1 + u3 * x3 + u5 * x5
        r5[i], r6[i] = e + o, e - o
        r7[i] = z1 * x1 + z3 * x3 + z5 * x5 + z7 * x7


@njit
def _pairs4x8(dst, d0, dstep, src, s0, step, coef, n):
    """All eight rows of F(4x4, 5x5)'s A (8 x 4; the filter gradient's transform of dy): row 0 from x0, the +/-
    pairs of rows 1-2, 3-4, 5-6 as e +/- o, e over x0, x2 and o over x1, x3, row 7 from x3 (coef rows: row 0, the
    pairs' e and o coefficients, row 7). The four inputs are loaded once."""
    v0, v1, v2, v3 = src[s0:], src[s0 + step:], src[s0 + 2 * step:], src[s0 + 3 * step:]
    r0, r1, r2, r3 = dst[d0:], dst[d0 + dstep:], dst[d0 + 2 * dstep:], dst[d0 + 3 * dstep:]
    r4, r5, r6, r7 = dst[d0 + 4 * dstep:], dst[d0 + 5 * dstep:], dst[d0 + 6 * dstep:], dst[d0 + 7 * dstep:]
    a0, z3 = coef[0, 0], coef[4, 0]
    p0, p2, p1, p3 = coef[1, 0], coef[1, 1], coef[1, 4], coef[1, 5]
    q0, q2, q1, q3 = coef[2, 0], coef[2, 1], coef[2, 4], coef[2, 5]
    u0, u2, u1, u3 = coef[3, 0], coef[3, 1], coef[3, 4], coef[3, 5]
    for i in range(_vec4x8(dst, d0, dstep, src, s0, step, coef, n), n):  # the rest after the whole vectors
        x0, x1, x2, x3 = v0[i], v1[i], v2[i], v3[i]
        r0[i] = a0 * x0
        e, o = p0 * x0 + p2 * x2, p1 * x1 + p3 * x3
        r1[i], r2[i] = e + o, e - o
        e, o = q0 * x0 + q2 * x2, q1 * x1 + q3 * x3
        r3[i], r4[i] = e + o, e - o
        e, o = u0 * x0 + u2 * x2, u1 * x1 + u3 * x3
        r5[i], r6[i] = e + o, e - o
        r7[i] = z3 * x3


@njit
def _rows(idx, coef, dst, d0, dstep, src, s0, step, n):
    """dst row k (at d0 + k * dstep) = L[k] applied to src's rows (at s0 + p * step), for every row k of L, by
    the groups of ``terms``: a single row or a +/- pair."""
    for gi in range(idx.shape[0]):
        k = idx[gi, 9]
        if idx[gi, 10] == 4:
            _pairs8x4(dst, d0, dstep, src, s0, step, coef, n)
            return
        if idx[gi, 10] == 8:
            _pairs8x8(dst, d0, dstep, src, s0, step, coef, n)
            return
        if idx[gi, 10] == 6:
            _pairs4x8(dst, d0, dstep, src, s0, step, coef, n)
            return
        if idx[gi, 10] == 2:
            _comb_pair(dst, d0 + k * dstep, d0 + (k + 1) * dstep, src, s0, step, idx[gi], coef[gi], n)
        else:
            _comb(dst, d0 + k * dstep, src, s0, step, idx[gi], coef[gi], n)


@njit
def _tf(idx, coef, src, s0, srs, scs, dst, d0, drs, dcs, n, tmp):
    """dst(k, l) = sum_{p,q} L[k, p] L[l, q] src(p, q) for the (la x lb) matrix L given by ``terms``, where
    src(p, q) is the n-vector at src[s0 + p * srs + q * scs] and dst(k, l) the one at dst[d0 + k * drs + l * dcs]:
    two 1-D passes through tmp (la * lb * BLOCK), BLOCK values of the vectors at a time so that both passes' rows
    stay in L2."""
    la, lb = idx[0, 11], idx[0, 12]
    for b in range(0, n, BLOCK):
        nb = min(BLOCK, n - b)
        for q in range(lb):  # tmp(k, q) = sum_p L[k, p] src(p, q)
            _rows(idx, coef, tmp, q * BLOCK, lb * BLOCK, src, s0 + b + q * scs, srs, nb)
        for k in range(la):  # dst(k, l) = sum_q L[l, q] tmp(k, q)
            _rows(idx, coef, dst, d0 + b + k * drs, dcs, tmp, k * lb * BLOCK, BLOCK, nb)


def _column_pairs(mat: list[list[Fraction]]) -> list[list[Fraction]] | None:
    """A 4 x 8 matrix whose columns 1-2, 3-4 and 5-6 are equal or opposite in every row, as each row's
    coefficients over (x0, s1, d1, s2, d2, s3, d3, x7) for ``_pairs8x4``; None for any other matrix."""
    if len(mat) != 4 or len(mat[0]) != 8:
        return None
    rows = []
    for row in mat:
        out = [row[0]]
        for j in (1, 3, 5):
            if row[j + 1] == row[j]:
                out += [row[j], Fraction(0)]
            elif row[j + 1] == -row[j]:
                out += [Fraction(0), row[j]]
            else:
                return None
        rows.append(out + [row[7]])
    return rows


def terms(mat: list[list[Fraction]], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """An exact matrix L (la x lb) as the groups ``_rows`` applies: a pair of rows k, k + 1 whose half sum E and
    half difference O have fewer nonzero entries between them (at most 4 each) than the two rows, else a single
    row. idx (groups, 13) int64: [0:8] the columns of the nonzero terms (a pair: E's in [0:4], O's in [4:8]),
    padded with column 0 and a zero coefficient; [8] how many (a pair: the larger of E's and O's); [9] the row k;
    [10] 1 or 2 rows (4, 8 or 6: the whole matrix by ``_pairs8x4``, ``_pairs8x8`` or ``_pairs4x8``); [11], [12]
    la and lb. coef (groups, 8) the terms' values."""
    la, lb = len(mat), len(mat[0])
    pairs8x4 = _column_pairs(mat)
    if pairs8x4 is not None:
        idx = np.zeros((4, 13), np.int64)
        idx[0, 9:] = 0, 4, la, lb
        return idx, np.array(pairs8x4, dtype)
    groups: list[tuple[int, list[tuple[int, Fraction]], list[tuple[int, Fraction]] | None]] = []
    k = 0
    while k < la:
        row = [(j, v) for j, v in enumerate(mat[k]) if v != 0]
        if k + 1 < la:
            e = [(j, (u + v) / 2) for j, (u, v) in enumerate(zip(mat[k], mat[k + 1])) if u + v != 0]
            o = [(j, (u - v) / 2) for j, (u, v) in enumerate(zip(mat[k], mat[k + 1])) if u - v != 0]
            twin = [(j, v) for j, v in enumerate(mat[k + 1]) if v != 0]
            if len(e) <= 4 and len(o) <= 4 and len(e) + len(o) < len(row) + len(twin):
                groups.append((k, e, o))
                k += 2
                continue
        groups.append((k, row, None))
        k += 1
    idx = np.zeros((len(groups), 13), np.int64)
    coef = np.zeros((len(groups), 8), dtype)
    if [(k, [j for j, _ in first], [j for j, _ in second or []]) for k, first, second in groups] == [
            (0, [0, 2, 4, 6], []), *((k, [2, 4, 6], [1, 3, 5]) for k in (1, 3, 5)), (7, [1, 3, 5, 7], [])]:
        idx = np.zeros((5, 13), np.int64)  # F(4x4, 5x5)'s B^T: the whole matrix by _pairs8x8
        idx[0, 9:] = 0, 8, la, lb
        coef = np.zeros((5, 8), dtype)
        for gi, (_, first, second) in enumerate(groups):
            coef[gi, :len(first)] = [float(v) for _, v in first]
            coef[gi, 4:4 + len(second or [])] = [float(v) for _, v in second or []]
        return idx, coef
    if [(k, [j for j, _ in first], [j for j, _ in second or []]) for k, first, second in groups] == [
            (0, [0], []), *((k, [0, 2], [1, 3]) for k in (1, 3, 5)), (7, [3], [])]:
        idx = np.zeros((5, 13), np.int64)  # F(4x4, 5x5)'s A: the whole matrix by _pairs4x8
        idx[0, 9:] = 0, 6, la, lb
        coef = np.zeros((5, 8), dtype)
        for gi, (_, first, second) in enumerate(groups):
            coef[gi, :len(first)] = [float(v) for _, v in first]
            coef[gi, 4:4 + len(second or [])] = [float(v) for _, v in second or []]
        return idx, coef
    for gi, (k, first, second) in enumerate(groups):
        idx[gi, 9:] = k, 1 if second is None else 2, la, lb
        for at, part in ((0, first), (4, second or [])):
            for j, (col, v) in enumerate(part):
                idx[gi, at + j], coef[gi, at + j] = col, float(v)
        idx[gi, 8] = len(first) if second is None else max(len(first), len(second), 3)
    return idx, coef
