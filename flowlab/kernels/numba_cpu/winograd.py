"""Winograd convolution (Lavin & Gray 2015, "Fast Algorithms for Convolutional Neural Networks") for stride-1,
undilated, ungrouped convolutions with square 3x3 or 5x5 filters: fewer multiplications than im2col's GEMM.

F(m x m, r x r) computes an m x m output tile from an a x a input tile (a = m + r - 1) as
``Y = A^T [ (G g G^T) * (B^T d B) ] A``: the a*a elementwise products, summed over the input channels, are a*a
GEMMs [out channels x in channels] x [in channels x tiles]. At LeNet's conv2 (5x5, 32 -> 64, 14x14) F(4x4, 5x5)
does 64 * 64 * 32 * 16 products a sample against im2col's 64 * 800 * 196: 4.8x fewer, at 5e-6 of the output's
scale in float32 (im2col: 4e-7); F(6x6) and F(7x7) lose 5e-4 and 8e-4, F(2x2) gives 2.8x (docs/performance.md).

The three kernels of a conv share the transforms:
- forward: the input tiles' B^T d B, the filter's G g G^T, a*a GEMMs, the output tiles' A^T M A;
- data gradient: the same algorithm on dy, padded by r - 1 - pad, with the filter flipped and its channels
  swapped (dx is dy's full correlation with the flipped filter);
- filter gradient: the trilinear form read the other way, ``dW = G^T [ sum_tiles (A dy A^T) * (B^T x B) ] G``:
  a*a GEMMs [out channels x tiles] x [tiles x in channels] accumulated over the batch (beta 1, in chunk order).

Each transform is a pair of 1-D passes vectorized over a chunk's tiles and channels (winograd_tf.py); the tiles
are gathered straight from NCHW, each pixel's channels stored into every tile that holds it, and the output
scattered back to NCHW (both by 64-byte block transposes in registers, transpose.py). A Winograd tile mixes
every input of its a x a patch, so a NaN or Inf would reach outputs the direct convolution keeps finite (and an
Inf becomes NaN): when any output comes out non-finite the call is done again by the im2col kernel (conv.py),
whose result then stands. Which algorithm a conv gets is decided when its kernel is built (winograd_conv.py's
``plan_for``); ``FLOWLAB_WINOGRAD=0`` keeps every conv on im2col.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from . import transpose
from ._numba import njit
from .microgemm import aligned, gemm_blocked, pad_cols
from .winograd_tf import BLOCK, _tf, terms

# the Winograd geometry vector: the conv as the core sees it (input channels CI, output channels CO, ...)
# and CIP, COP the channel counts padded to whole blocks of the GEMM micro-kernel (microgemm.py)
N, CI, HI, WI, CO, HO, WO, PT, PL, R, M, A, TH, TW, HP, WP, S, CIP, COP = range(19)
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
    """The output tile m of F(m x m, r x r): 4 for both filters (a = 8 for 5x5, 6 for 3x3). Float32 error against
    float64, of the output's scale (32 channels, numpy): F(4x4, 5x5) 3.5e-6, F(4x4, 3x3) 2.8e-6, F(6x6, 3x3)
    5.0e-6 (21 % fewer products than F(4x4, 3x3), more of a partial tile wasted; not measured for speed)."""
    return 4


@njit
def _gather_tiles(x, s0, ns, c, cp, hs, ws, pt, pl, g, size, step, xq, d):
    """d[p, q, tile, ci] = x[s0 + s, ci, ti * step + p - pt, tj * step + q - pl] (zero outside x; channels cp apart,
    zero from c on) for the size x size patches of the chunk's tiles (s, ti, tj): each tile's pixel a contiguous
    vector of channels (the cores keep the table of _fan_table from chunk to chunk)."""
    doff, count, zeros = _fan_table(64 // x.itemsize, c, cp, hs, ws, pt, pl, g, size, step, ns * g[TH] * g[TW])
    _gather_fan(x, s0, ns, c, cp, hs, ws, pt, pl, g, size, step, xq, d, doff, count, zeros)


@njit
def _fan_table(n, c, cp, hs, ws, pt, pl, g, size, step, t):
    """Where _gather_fan writes a chunk of t tiles (for its first sample; sample s is s * th * tw * cp further on):
    pixel k of the b-th block of n pixels (the plane's pixels in row order, the last block moved back to end at
    the edge) goes to its e-th tile at doff[b, e * n + k], count[b] of them at most (a pixel in fewer tiles repeats
    its last: the same bits stored twice); zeros, the tiles' pixels outside x. Made once a call and chunk size:
    made for every chunk it took 0.4-1 ms a gather at LeNet's shapes."""
    th, tw = g[TH], g[TW]
    plane, per = hs * ws, -(-size // step)
    blocks = -(-plane // n) if c >= n and plane >= n else 0
    doff, count = np.empty((blocks, per * per * n), np.int64), np.zeros(blocks, np.int64)
    for b in range(blocks):
        p0 = min(b * n, plane - n)
        for k in range(n):
            i = (p0 + k) // ws
            row, col = i + pt, p0 + k - i * ws + pl
            e = 0
            for ti in range(max(0, (row - size + step) // step), min(th, row // step + 1)):
                for tj in range(max(0, (col - size + step) // step), min(tw, col // step + 1)):
                    doff[b, e * n + k] = (((row - ti * step) * size + col - tj * step) * t + ti * tw + tj) * cp
                    e += 1
            count[b] = max(count[b], e)
            for f in range(e, per * per):
                doff[b, f * n + k] = doff[b, (e - 1) * n + k]
    zeros = np.empty(size * size * th * tw, np.int64)
    nz = 0
    for ti in range(th if blocks else 0):
        for tj in range(tw):
            for p in range(size):
                for q in range(size):
                    if not (0 <= ti * step + p - pt < hs and 0 <= tj * step + q - pl < ws):
                        zeros[nz] = ((p * size + q) * t + ti * tw + tj) * cp
                        nz += 1
    return doff, count, zeros[:nz]


@njit
def _gather_fan(x, s0, ns, c, cp, hs, ws, pt, pl, g, size, step, xq, d, doff, count, zeros, border=True):
    """_gather_tiles by block transposes of n channels x n pixels, each pixel's vector of channels stored straight
    into every tile that holds it (transpose.fan; through a channels-last copy of the chunk, the copy out of it
    took 0.6-1 ms a gather at LeNet's conv2). Fewer channels or pixels than a block go value by value through xq
    (_gather_small). ``border`` False: d's zero border is left as it is (the forward's d holds nothing else, so
    after a chunk of the same size it is still zero: 0.2-0.4 ms a gather at LeNet's conv2)."""
    th, tw = g[TH], g[TW]
    t = ns * th * tw
    plane, n = hs * ws, 64 // x.itemsize
    if c < n or plane < n:
        _gather_small(x, s0, ns, c, cp, hs, ws, pt, pl, g, size, step, xq, d)
        return
    soff = np.empty(n, np.int64)
    for k in range(n):
        soff[k] = k * plane
    for s in range(ns):
        base = s * th * tw * cp
        for z in range(zeros.size if border else 0):  # what no pixel of x reaches: the zero border
            dv = d[base + zeros[z]:]
            for ci in range(cp):
                dv[ci] = 0.0
        for b in range(count.size):
            p0 = min(b * n, plane - n)
            for cb in range(0, c, n):
                c0 = min(cb, c - n)
                transpose.fan(x, ((s0 + s) * c + c0) * plane + p0, soff, d, base + c0, doff[b], count[b])
    if cp > c:  # channels c to cp, zero everywhere (d is shared by x's and dy's tiles in the filter gradient)
        for k in range(0, size * size * t * cp, cp):
            for ci in range(c, cp):
                d[k + ci] = 0.0


@njit
def _gather_small(x, s0, ns, c, cp, hs, ws, pt, pl, g, size, step, xq, d):
    """_gather_tiles for fewer channels or pixels than a block: the samples go value by value into xq, (ns, hq,
    wq, c) with x at row pt, column pl and a zero border, and each tile's pixels are copied out of it."""
    th, tw = g[TH], g[TW]
    t = ns * th * tw
    hq, wq = (th - 1) * step + size, (tw - 1) * step + size
    plane = hs * ws
    for s in range(ns):
        for ci in range(c):
            for i in range(hs):
                src = x[((s0 + s) * c + ci) * plane + i * ws:]
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
                        dv = d[((p * size + q) * t + tile) * cp:]
                        for ci in range(c):
                            dv[ci] = sv[q * c + ci]
                        for ci in range(c, cp):  # d is shared by x's and dy's tiles: pad both with zeros
                            dv[ci] = 0.0


@njit
def _nonfinite(a, n):
    """How many of a[:n] are NaN or infinite (x - x is NaN exactly then); an integer sum, so it vectorizes."""
    count = 0
    for i in range(n):
        count += (a[i] - a[i]) != 0.0
    return count


@njit
def _scatter_tiles(yt, s0, ns, c, cp, hs, ws, g, y):
    """y[s0 + s, ci, ti * m + i, tj * m + j] = yt[i, j, tile, ci] (channels cp apart) where inside y: each
    pixel's channels read as one contiguous run (reading them across the tiles' rows instead took 1.8x the time)."""
    th, tw, m = g[TH], g[TW], g[M]
    t = ns * th * tw
    plane, n = hs * ws, 64 // y.itemsize
    soff, doff = np.empty(n, np.int64), np.empty(n, np.int64)
    for k in range(n):
        doff[k] = k * plane
    for s in range(ns):
        if c >= n and plane >= n:  # n x n blocks (pixels in row order x channels), the last ones moved back
            for pb in range(0, plane, n):
                p0 = min(pb, plane - n)
                for k in range(n):
                    row = (p0 + k) // ws
                    col = p0 + k - row * ws
                    ti, tj = row // m, col // m
                    soff[k] = (((row - ti * m) * m + col - tj * m) * t + (s * th + ti) * tw + tj) * cp
                for cb in range(0, c, n):
                    c0 = min(cb, c - n)
                    transpose.block(yt, c0, soff, y, ((s0 + s) * c + c0) * plane + p0, doff)
            continue
        ys = y[(s0 + s) * c * plane:]  # too small for a whole block: value by value
        for ti in range(th):
            for i in range(min(m, hs - ti * m)):
                for tj in range(tw):
                    tile = (s * th + ti) * tw + tj
                    for j in range(min(m, ws - tj * m)):
                        src = yt[((i * m + j) * t + tile) * cp:]
                        yv = ys[(ti * m + i) * ws + tj * m + j:]
                        for ci in range(c):
                            yv[ci * plane] = src[ci]


@njit
def _filter_transform(w, g, flip, gi, gc, src, tmp, u):
    """u[kl, c, o] = (G w[o, c] G^T)[kl] (rows of COP, zero from CO on: the GEMMs' B), w (CO, CI, R, R); with flip
    the data gradient's filter: w is (CI, CO, R, R) and its planes are turned by 180 degrees."""
    co, ci, cop, r, a = g[CO], g[CI], g[COP], g[R], g[A]
    n = ci * cop
    for o in range(co):
        for c in range(ci):
            for i in range(r):
                for j in range(r):
                    if flip:
                        src[(i * r + j) * n + c * cop + o] = w[((c * co + o) * r + r - 1 - i) * r + r - 1 - j]
                    else:
                        src[(i * r + j) * n + c * cop + o] = w[((o * ci + c) * r + i) * r + j]
    _tf(gi, gc, src, 0, r * n, n, u, 0, a * n, n, n, tmp)


@njit
def winograd_core(x, u, y, g, bi, bc, ai, ac, xq, d, tmp, v, mm, yt):
    """y = the correlation of x with the transformed filter u, chunk by chunk of g[S] samples; returns how many
    outputs are not finite."""
    n, ci, co, a, m, th, tw, chunk = g[N], g[CI], g[CO], g[A], g[M], g[TH], g[TW], g[S]
    cip, cop = g[CIP], g[COP]
    bad = 0
    lanes = 64 // x.itemsize
    xo, xk, xz = _fan_table(lanes, ci, cip, g[HI], g[WI], g[PT], g[PL], g, a, m, min(chunk, n) * th * tw)
    for s0 in range(0, n, chunk):
        ns = min(chunk, n - s0)
        t = ns * th * tw
        if ns < chunk:  # the partial last chunk: its tiles are fewer apart
            xo, xk, xz = _fan_table(lanes, ci, cip, g[HI], g[WI], g[PT], g[PL], g, a, m, t)
        border = s0 == 0 or ns < chunk
        _gather_fan(x, s0, ns, ci, cip, g[HI], g[WI], g[PT], g[PL], g, a, m, xq, d, xo, xk, xz, border)
        _tf(bi, bc, d, 0, a * t * cip, t * cip, v, 0, a * t * cip, t * cip, t * cip, tmp)  # V = B^T d B
        for kl in range(a * a):  # M_kl (tiles x COP) = V_kl (tiles x CI) U_kl (CI x COP)
            gemm_blocked(False, t, cop, ci, v, kl * t * cip, cip, u, kl * ci * cop, cop, False, mm, kl * t * cop, cop)
        _tf(ai, ac, mm, 0, a * t * cop, t * cop, yt, 0, m * t * cop, t * cop, t * cop, tmp)  # Y = A^T M A
        bad += _nonfinite(yt, m * m * t * cop)
        _scatter_tiles(yt, s0, ns, co, cop, g[HO], g[WO], g, y)
    return bad


@njit
def winograd_filter_core(dy, x, dw, g, bi, bc, ami, amc, gti, gtc, xq, dq, d, tmp, v, e, p, src):
    """dW[o, c] = G^T [ sum over the batch's tiles (A dy A^T) * (B^T x B) ] G, summed chunk by chunk (beta);
    returns how many values of dW are not finite. x's tiles and dy's lie apart in d (dy's from yd on), so that
    each keeps its zero border from chunk to chunk (rewriting both every chunk: 0.2-0.4 ms)."""
    n, ci, co, a, th, tw, chunk, r, m = g[N], g[CI], g[CO], g[A], g[TH], g[TW], g[S], g[R], g[M]
    cip, cop = g[CIP], g[COP]
    lanes, t = 64 // x.itemsize, min(chunk, n) * th * tw
    yd = a * a * t * cip
    xo, xk, xz = _fan_table(lanes, ci, cip, g[HI], g[WI], g[PT], g[PL], g, a, m, t)
    yo, yk, yz = _fan_table(lanes, co, cop, g[HO], g[WO], 0, 0, g, m, m, t)
    for s0 in range(0, n, chunk):
        ns = min(chunk, n - s0)
        t = ns * th * tw
        if ns < chunk:  # the partial last chunk: its tiles are fewer apart
            xo, xk, xz = _fan_table(lanes, ci, cip, g[HI], g[WI], g[PT], g[PL], g, a, m, t)
            yo, yk, yz = _fan_table(lanes, co, cop, g[HO], g[WO], 0, 0, g, m, m, t)
        border = s0 == 0 or ns < chunk
        _gather_fan(x, s0, ns, ci, cip, g[HI], g[WI], g[PT], g[PL], g, a, m, xq, d, xo, xk, xz, border)
        _tf(bi, bc, d, 0, a * t * cip, t * cip, v, 0, a * t * cip, t * cip, t * cip, tmp)  # B^T x B
        _gather_fan(dy, s0, ns, co, cop, g[HO], g[WO], 0, 0, g, m, m, dq, d[yd:], yo, yk, yz, border)
        _tf(ami, amc, d, yd, m * t * cop, t * cop, e, 0, a * t * cop, t * cop, t * cop, tmp)  # A dy A^T
        for kl in range(a * a):  # P_kl (CO x CIP) += E_kl^T (CO x tiles) V_kl (tiles x CIP)
            gemm_blocked(True, co, cip, t, e, kl * t * cop, cop, v, kl * t * cip, cip, s0 > 0, p, kl * co * cip, cip)
    nn = co * cip
    _tf(gti, gtc, p, 0, a * nn, nn, src, 0, r * nn, nn, nn, tmp)  # G^T P G
    for o in range(co):
        for c in range(ci):
            for k in range(r * r):
                dw[(o * ci + c) * r * r + k] = src[k * nn + o * cip + c]
    return _nonfinite(src, r * r * nn)


class Winograd:
    """One conv's Winograd plan and buffers, made once when the runtime builds the kernel: ``geo`` the core's
    geometry (for the data gradient, dy is the core's input and dx its output), the matrices as their rows'
    nonzero terms, and the chunk of samples done at a time: about 128 tiles (8 samples at LeNet's conv2; the
    three kernels took 0.72-0.75x the time of 512-tile chunks, 0.97-1.05x of 64-tile ones), so that a chunk's
    tiles, transforms and products (0.5-1 MB each) stay near L2. ``m`` the output tile (F(m x m, r x r): 4, or 2)
    and ``chunk_tiles`` are what winograd_conv.py's autotune chooses among."""

    def __init__(self, n: int, ci: int, hi: int, wi: int, co: int, ho: int, wo: int, pt: int, pl: int, r: int,
                 dtype: np.dtype, chunk_tiles: int = 128, m: int | None = None) -> None:
        m = m or tile_for(r)
        a = m + r - 1
        th, tw = -(-ho // m), -(-wo // m)
        hp, wp = th * m + r - 1, tw * m + r - 1
        chunk = max(1, min(n, chunk_tiles // (th * tw)))
        cip, cop = pad_cols(ci, dtype), pad_cols(co, dtype)
        self.geo = np.array([n, ci, hi, wi, co, ho, wo, pt, pl, r, m, a, th, tw, hp, wp, chunk, cip, cop], np.int64)
        at, g, bt = matrices(m, r)
        transpose = lambda mat: [list(col) for col in zip(*mat)]
        self.mats = {"BT": bt, "AT": at, "A": transpose(at), "G": g, "GT": transpose(g)}
        self.b, self.a, self.am, self.g, self.gt = (terms(mat, dtype) for mat in self.mats.values())
        t = chunk * th * tw
        big, nn = max(cip, cop), max(ci * cop, co * cip)
        # the input's samples, channels last, zero-bordered, and dy's (the filter gradient): for fewer channels or
        # pixels than a transpose block only (_gather_small)
        self.xq = aligned(chunk * hp * wp * ci, dtype)
        self.dq = aligned(chunk * th * m * tw * m * co, dtype)
        # the gathered tiles (the filter gradient's dy's after x's)
        self.d = aligned(a * a * t * cip + max(a * a * (big - cip), m * m * cop) * t, dtype)
        self.tmp = aligned(a * a * BLOCK, dtype)
        self.v = aligned(a * a * t * cip, dtype)
        self.mm = aligned(a * a * t * cop, dtype)  # the products (forward), or dy's transform (filter gradient)
        self.yt = aligned(m * m * t * cop, dtype)
        self.u = aligned(a * a * nn, dtype)  # the filter's transform, or the filter gradient's sums
        self.src = aligned(r * r * nn, dtype)  # its padded columns stay zero

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
