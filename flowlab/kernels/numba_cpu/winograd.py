"""Winograd convolution (Lavin & Gray 2015, "Fast Algorithms for Convolutional Neural Networks") for stride-1,
undilated, ungrouped convolutions with square 3x3 or 5x5 filters: fewer multiplications than im2col's GEMM.

F(m x m, r x r) computes an m x m output tile from an a x a input tile (a = m + r - 1) as
``Y = A^T [ (G g G^T) * (B^T d B) ] A``: the a*a elementwise products, summed over the input channels, are a*a
GEMMs [out channels x in channels] x [in channels x tiles]. At LeNet's conv2 (5x5, 32 -> 64, 14x14) F(4x4, 5x5)
does 64 * 64 * 32 * 16 products a sample against im2col's 64 * 800 * 196: 4.8x fewer, at 5e-6 of the output's
scale in float32 (im2col: 4e-7); F(6x6) and F(7x7) lose 5e-4 and 8e-4, F(2x2) gives 2.8x (see README).

The three kernels of a conv share the transforms:
- forward: the input tiles' B^T d B, the filter's G g G^T, a*a GEMMs, the output tiles' A^T M A;
- data gradient: the same algorithm on dy, padded by r - 1 - pad, with the filter flipped and its channels
  swapped (dx is dy's full correlation with the flipped filter);
- filter gradient: the trilinear form read the other way, ``dW = G^T [ sum_tiles (A dy A^T) * (B^T x B) ] G``:
  a*a GEMMs [out channels x tiles] x [tiles x in channels] accumulated over the batch (beta 1, in chunk order).

Each transform is a pair of 1-D passes vectorized over the tiles of a chunk of samples (tiles innermost), and a
matrix's zero entries are skipped. A Winograd tile mixes every input of its a x a patch, so a NaN or Inf would
reach outputs the direct convolution keeps finite (and an Inf becomes NaN): when any output comes out non-finite
the call is done again by the im2col kernel (conv.py), whose result then stands. Which algorithm a conv gets is
decided when its kernel is built (``plan_for``); ``FLOWLAB_WINOGRAD=0`` keeps every conv on im2col.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ._numba import njit
from .blas import gemm

# the Winograd geometry vector: the conv as the core sees it (input channels CI, output channels CO, ...)
N, CI, HI, WI, CO, HO, WO, PT, PL, R, M, A, TH, TW, HP, WP, S = range(17)
BLOCK = 512  # values of a transform's vectors done at a time: 64 rows of 2 KB, tmp included, in L2
POINTS = (0, 1, -1, 2, -2, Fraction(1, 2), Fraction(-1, 2), 3, -3)  # interpolation points, in the order taken


def _inverse(rows: list[list[Fraction]]) -> list[list[Fraction]]:
    """The exact inverse of a square rational matrix (Gauss-Jordan)."""
    n = len(rows)
    aug = [list(row) + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(rows)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if aug[r][col] != 0)
        aug[col], aug[pivot] = aug[pivot], aug[col]
        p = aug[col][col]
        aug[col] = [v / p for v in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [v - f * u for v, u in zip(aug[r], aug[col])]
    return [row[n:] for row in aug]


def matrices(m: int, r: int) -> tuple[list[list[Fraction]], list[list[Fraction]], list[list[Fraction]]]:
    """Exact (A^T, G, B^T) of F(m, r) for correlation, ``y = A^T [(G g) * (B^T d)]``, at the first a - 1 of POINTS
    and infinity (Lavin's construction, by the Toom-Cook linear convolution and the transposition principle):
    with V_k the a x k Vandermonde matrix (the row for infinity picks the leading coefficient), A = V_m,
    G = D V_r and B^T = D^-1 V_a^-T, D = diag(1 / |prod_{l != j} (p_j - p_l)|), which keeps B^T's entries small."""
    a = m + r - 1
    points = [Fraction(p) for p in POINTS[:a - 1]]

    def vandermonde(k: int) -> list[list[Fraction]]:
        return [[p ** i for i in range(k)] for p in points] + [[Fraction(0)] * (k - 1) + [Fraction(1)]]

    scale = []
    for j, p in enumerate(points):
        f = Fraction(1)
        for q in points[:j] + points[j + 1:]:
            f *= p - q
        scale.append(abs(f))
    scale.append(Fraction(1))
    vm, vr, inv = vandermonde(m), vandermonde(r), _inverse(vandermonde(a))
    at = [[vm[k][i] for k in range(a)] for i in range(m)]
    g = [[vr[k][j] / scale[k] for j in range(r)] for k in range(a)]
    bt = [[scale[k] * inv[j][k] for j in range(a)] for k in range(a)]
    return at, g, bt


def tile_for(r: int) -> int:
    """The output tile m of F(m x m, r x r): a = m + r - 1 = 8 (3x3: F(6x6) would do fewer products but loses
    more precision; F(4x4, 3x3) and F(4x4, 5x5) stay near 5e-6 of the output's scale)."""
    return 4


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
def _rows(idx, coef, dst, d0, dstep, src, s0, step, n):
    """dst row k (at d0 + k * dstep) = L[k] applied to src's rows (at s0 + p * step), for every row k of L, by
    the groups of ``terms``: a single row or a +/- pair."""
    for gi in range(idx.shape[0]):
        k = idx[gi, 9]
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


@njit
def _gather_tiles(x, s0, ns, c, hs, ws, pt, pl, g, size, step, xq, d):
    """d[p, q, tile, ci] = x[s0 + s, ci, ti * step + p - pt, tj * step + q - pl] (zero outside x) for the
    size x size patches of the chunk's tiles (s, ti, tj): each tile's pixel a contiguous vector of channels.
    The samples go first into xq, (ns, hq, wq, c) with x at row pt, column pl and a zero border, so that each
    pixel's channels are one contiguous copy (a gather straight from NCHW read them 4 bytes at a time)."""
    th, tw = g[TH], g[TW]
    t = ns * th * tw
    hq, wq = (th - 1) * step + size, (tw - 1) * step + size
    for s in range(ns):
        for ci in range(c):
            for i in range(hs):
                src = x[((s0 + s) * c + ci) * hs * ws + i * ws:]
                dv = xq[((s * hq + i + pt) * wq + pl) * c + ci:]
                for j in range(ws):
                    dv[j * c] = src[j]
    for s in range(ns):
        for ti in range(th):
            for tj in range(tw):
                tile = (s * th + ti) * tw + tj
                for p in range(size):
                    sv = xq[((s * hq + ti * step + p) * wq + tj * step) * c:]
                    for q in range(size):
                        dv = d[((p * size + q) * t + tile) * c:]
                        for ci in range(c):
                            dv[ci] = sv[q * c + ci]


@njit
def _nonfinite(a, n):
    """How many of a[:n] are NaN or infinite (x - x is NaN exactly then); an integer sum, so it vectorizes."""
    count = 0
    for i in range(n):
        count += (a[i] - a[i]) != 0.0
    return count


@njit
def _scatter_tiles(yt, s0, ns, c, hs, ws, g, y):
    """y[s0 + s, ci, ti * m + i, tj * m + j] = yt[i, j, tile, ci] where inside y: each pixel's channels read as
    one contiguous run (reading them across the tiles' rows instead took 1.8x the time)."""
    th, tw, m = g[TH], g[TW], g[M]
    t = ns * th * tw
    plane = hs * ws
    for s in range(ns):
        ys = y[(s0 + s) * c * plane:]
        for ti in range(th):
            for i in range(min(m, hs - ti * m)):
                for tj in range(tw):
                    tile = (s * th + ti) * tw + tj
                    for j in range(min(m, ws - tj * m)):
                        src = yt[((i * m + j) * t + tile) * c:]
                        yv = ys[(ti * m + i) * ws + tj * m + j:]
                        for ci in range(c):
                            yv[ci * plane] = src[ci]


@njit
def _filter_transform(w, g, flip, gi, gc, src, tmp, u):
    """u[kl, o, c] = (G w[o, c] G^T)[kl], w (CO, CI, R, R); with flip the data gradient's filter: w is
    (CI, CO, R, R) and its planes are turned by 180 degrees."""
    co, ci, r, a = g[CO], g[CI], g[R], g[A]
    n = co * ci
    for o in range(co):
        for c in range(ci):
            for i in range(r):
                for j in range(r):
                    if flip:
                        src[(i * r + j) * n + o * ci + c] = w[((c * co + o) * r + r - 1 - i) * r + r - 1 - j]
                    else:
                        src[(i * r + j) * n + o * ci + c] = w[((o * ci + c) * r + i) * r + j]
    _tf(gi, gc, src, 0, r * n, n, u, 0, a * n, n, n, tmp)


@njit
def winograd_core(x, u, y, g, bi, bc, ai, ac, xq, d, tmp, v, mm, yt):
    """y = the correlation of x with the transformed filter u, chunk by chunk of g[S] samples; returns how many
    outputs are not finite."""
    n, ci, co, a, m, th, tw, chunk = g[N], g[CI], g[CO], g[A], g[M], g[TH], g[TW], g[S]
    bad = 0
    for s0 in range(0, n, chunk):
        ns = min(chunk, n - s0)
        t = ns * th * tw
        _gather_tiles(x, s0, ns, ci, g[HI], g[WI], g[PT], g[PL], g, a, m, xq, d)
        _tf(bi, bc, d, 0, a * t * ci, t * ci, v, 0, a * t * ci, t * ci, t * ci, tmp)  # V = B^T d B
        for kl in range(a * a):  # M_kl (tiles x CO) = V_kl (tiles x CI) U_kl^T
            gemm(False, True, t, co, ci, v, kl * t * ci, ci, u, kl * co * ci, ci, 0.0, mm, kl * t * co, co)
        _tf(ai, ac, mm, 0, a * t * co, t * co, yt, 0, m * t * co, t * co, t * co, tmp)  # Y = A^T M A
        bad += _nonfinite(yt, m * m * t * co)
        _scatter_tiles(yt, s0, ns, co, g[HO], g[WO], g, y)
    return bad


@njit
def winograd_filter_core(dy, x, dw, g, bi, bc, ami, amc, gti, gtc, xq, dq, d, tmp, v, e, p, src):
    """dW[o, c] = G^T [ sum over the batch's tiles (A dy A^T) * (B^T x B) ] G, summed chunk by chunk (beta 1);
    returns how many values of dW are not finite."""
    n, ci, co, a, th, tw, chunk, r, m = g[N], g[CI], g[CO], g[A], g[TH], g[TW], g[S], g[R], g[M]
    for s0 in range(0, n, chunk):
        ns = min(chunk, n - s0)
        t = ns * th * tw
        _gather_tiles(x, s0, ns, ci, g[HI], g[WI], g[PT], g[PL], g, a, m, xq, d)
        _tf(bi, bc, d, 0, a * t * ci, t * ci, v, 0, a * t * ci, t * ci, t * ci, tmp)  # B^T x B
        _gather_tiles(dy, s0, ns, co, g[HO], g[WO], 0, 0, g, m, m, dq, d)
        _tf(ami, amc, d, 0, m * t * co, t * co, e, 0, a * t * co, t * co, t * co, tmp)  # A dy A^T
        beta = 0.0 if s0 == 0 else 1.0
        for kl in range(a * a):  # P_kl (CO x CI) += E_kl^T (CO x tiles) V_kl (tiles x CI)
            gemm(True, False, co, ci, t, e, kl * t * co, co, v, kl * t * ci, ci, beta, p, kl * co * ci, ci)
    nn = co * ci
    _tf(gti, gtc, p, 0, a * nn, nn, src, 0, r * nn, nn, nn, tmp)  # G^T P G
    for o in range(co):
        for c in range(ci):
            for k in range(r * r):
                dw[(o * ci + c) * r * r + k] = src[k * nn + o * ci + c]
    return _nonfinite(src, r * r * nn)


def terms(mat: list[list[Fraction]], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """An exact matrix L (la x lb) as the groups ``_rows`` applies: a pair of rows k, k + 1 whose half sum E and
    half difference O have fewer nonzero entries between them (at most 4 each) than the two rows, else a single
    row. idx (groups, 13) int64: [0:8] the columns of the nonzero terms (a pair: E's in [0:4], O's in [4:8]),
    padded with column 0 and a zero coefficient; [8] how many (a pair: the larger of E's and O's); [9] the row k;
    [10] 1 or 2 rows; [11], [12] la and lb. coef (groups, 8) the terms' values."""
    la, lb = len(mat), len(mat[0])
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
    for gi, (k, first, second) in enumerate(groups):
        idx[gi, 9:] = k, 1 if second is None else 2, la, lb
        for at, part in ((0, first), (4, second or [])):
            for j, (col, v) in enumerate(part):
                idx[gi, at + j], coef[gi, at + j] = col, float(v)
        idx[gi, 8] = len(first) if second is None else max(len(first), len(second), 3)
    return idx, coef


class Winograd:
    """One conv's Winograd plan and buffers, made once when the runtime builds the kernel: ``geo`` the core's
    geometry (for the data gradient, dy is the core's input and dx its output), the matrices as their rows'
    nonzero terms, and the chunk of samples done at a time: about 128 tiles (8 samples at LeNet's conv2; the
    three kernels took 0.72-0.75x the time of 512-tile chunks, 0.97-1.05x of 64-tile ones), so that a chunk's
    tiles, transforms and products (0.5-1 MB each) stay near L2."""

    def __init__(self, n: int, ci: int, hi: int, wi: int, co: int, ho: int, wo: int, pt: int, pl: int, r: int,
                 dtype: np.dtype, chunk_tiles: int = 128) -> None:
        m = tile_for(r)
        a = m + r - 1
        th, tw = -(-ho // m), -(-wo // m)
        hp, wp = th * m + r - 1, tw * m + r - 1
        chunk = max(1, min(n, chunk_tiles // (th * tw)))
        self.geo = np.array([n, ci, hi, wi, co, ho, wo, pt, pl, r, m, a, th, tw, hp, wp, chunk], np.int64)
        at, g, bt = matrices(m, r)
        transpose = lambda mat: [list(col) for col in zip(*mat)]
        self.mats = {"BT": bt, "AT": at, "A": transpose(at), "G": g, "GT": transpose(g)}
        self.b, self.a, self.am, self.g, self.gt = (terms(mat, dtype) for mat in self.mats.values())
        t = chunk * th * tw
        big = max(ci, co)
        self.xq = np.zeros(chunk * hp * wp * ci, dtype)  # the input's samples, channels last, zero-bordered
        self.dq = np.zeros(chunk * th * m * tw * m * co, dtype)  # dy's (the filter gradient)
        self.d = np.empty(a * a * t * big, dtype)  # the gathered tiles
        self.tmp = np.empty(a * a * BLOCK, dtype)
        self.v = np.empty(a * a * t * ci, dtype)
        self.mm = np.empty(a * a * t * co, dtype)  # the products (forward), or dy's transform (filter gradient)
        self.yt = np.empty(m * m * t * co, dtype)
        self.u = np.empty(a * a * co * ci, dtype)  # the filter's transform, or the filter gradient's sums
        self.src = np.empty(r * r * co * ci, dtype)

    @property
    def algorithm(self) -> str:
        return f"F({self.geo[M]}x{self.geo[M]}, {self.geo[R]}x{self.geo[R]})"

    def products(self) -> int:
        """Multiplications of the a*a GEMMs over the batch (the transforms' are not counted)."""
        n, ci, co, a, th, tw = (int(self.geo[i]) for i in (N, CI, CO, A, TH, TW))
        return a * a * co * ci * n * th * tw

    def __repr__(self) -> str:
        g = self.geo
        return (f"Winograd({self.algorithm}, {g[CI]}->{g[CO]} channels, {g[HO]}x{g[WO]} out, "
                f"{g[TH] * g[TW]} tiles a sample, {g[S]} samples a chunk)")
