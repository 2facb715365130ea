"""Numba CPU kernels: matmul (BLAS through blas.py's gemm; a loop kernel for products of few rows), bias_add, softmax,
sparse softmax cross entropy."""

from __future__ import annotations

import functools
import json
import math as _m
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import DTypeLike

from ..checks import check_labels
from ..registry import FusedCall, KernelCtx, KernelFn, Owned, fusable, register_kernel
from ._numba import cache_dir, njit, target_cpu
from .blas import blas_ready, blas_source, blas_threads, gemm
from .microgemm import gemm_nt, nt_scratch

blas_ready()  # before _dot_gemm is compiled or loaded from the cache: gemm's BLAS symbol is resolved by name


@njit
def _dot(a, b, out):
    np.dot(a, b, out)


@njit
def _blas_layout(x):
    """(transposed, leading dimension) of a 2-D operand that is C-contiguous or the transpose of a C-contiguous
    array, as a row-major GEMM takes it; leading dimension 0 for any other strides."""
    size = x.itemsize
    if x.strides[1] == size and x.strides[0] == x.shape[1] * size:
        return False, x.shape[1]
    if x.strides[0] == size and x.strides[1] == x.shape[0] * size:
        return True, x.shape[0]
    return False, 0


@njit
def _dot_gemm(a, b, out):
    """out = a @ b (float32 / float64) through the kernels' shared GEMM (blas.py), not Numba's np.dot: that one
    calls SciPy's BLAS, and where the NumPy and SciPy wheels bundle different OpenBLAS builds, blas.py can call
    NumPy's (0.3.31 here against SciPy's 0.3.30: the MLP's two 100x784x512 GEMMs ran 13-15 % faster in it)."""
    m, k, n = a.shape[0], a.shape[1], out.shape[1]
    ta, lda = _blas_layout(a)
    tb, ldb = _blas_layout(b)
    if m == 0 or n == 0 or k == 0 or lda == 0 or ldb == 0:  # BLAS wants lda >= 1
        np.dot(a, b, out)
        return
    # the buffers in memory order. Arrays typed C or F only (registers, their transposes): reshape does not type
    # for any other layout, where ravel would copy (and out would be written in the copy)
    fa = a.T.reshape(a.size) if ta else a.reshape(a.size)
    fb = b.T.reshape(b.size) if tb else b.reshape(b.size)
    gemm(ta, tb, m, n, k, fa, 0, lda, fb, 0, ldb, 0.0, out.reshape(out.size), 0, n)


@njit
def _add_rows(out, i, a, k, kn, b):
    """out[i, :] += sum over k..kn-1 (1 to 4 terms) of a[i, k] * b[k, :], in that order: one pass over the row
    for up to four of its terms (the store, not the arithmetic, bounds a row update)."""
    r = kn - k
    if r == 4:
        a0, a1, a2, a3 = a[i, k], a[i, k + 1], a[i, k + 2], a[i, k + 3]
        for j in range(out.shape[1]):
            out[i, j] += (a0 * b[k, j] + a1 * b[k + 1, j]) + (a2 * b[k + 2, j] + a3 * b[k + 3, j])
    elif r == 3:
        a0, a1, a2 = a[i, k], a[i, k + 1], a[i, k + 2]
        for j in range(out.shape[1]):
            out[i, j] += (a0 * b[k, j] + a1 * b[k + 1, j]) + a2 * b[k + 2, j]
    elif r == 2:
        a0, a1 = a[i, k], a[i, k + 1]
        for j in range(out.shape[1]):
            out[i, j] += a0 * b[k, j] + a1 * b[k + 1, j]
    else:
        a0 = a[i, k]
        for j in range(out.shape[1]):
            out[i, j] += a0 * b[k, j]


@njit
def _dot_few_rows(a, b, out):
    """out = a @ b for an out of few rows (FEW_ROWS) and b, out with contiguous rows: for every 4 rows of b, each
    out row (all of out stays in L1) takes their 4 terms in one vectorized pass. BLAS packs its panels for
    a GEMM this thin and ran dlogits^T h (10 x 100 x 512) at 18 GFLOP/s; this runs it about 1.7x faster.

    The order of the sums is fixed by the source (no fastmath): the protocol's kernel and a fused segment's
    inlined copy of it give the same bits whatever shapes the compiler sees as constants."""
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = 0
    for k in range(0, a.shape[1], 4):
        for i in range(out.shape[0]):
            _add_rows(out, i, a, k, min(k + 4, a.shape[1]), b)


FEW_ROWS = 16  # out rows up to which _dot_few_rows may replace BLAS ...
LONG_ROWS = 64  # ... when rows are at least this long (shorter ones do not fill the vector loop)
# the 2-D product kernels, each called (a, b, out, ...): the benchmarks count their FLOPs
PRODUCT_KERNELS = frozenset({_dot, _dot_gemm, _dot_few_rows, gemm_nt})


# Which of _dot_few_rows (or microgemm.gemm_nt, for x W^T) and BLAS runs a product is measured, not fixed: it differs
# by machine. The MLP's dW2 (10 x 100 x 512): on the AMD EPYC (AVX2) BLAS ran it at 18 GFLOP/s and the loop 1.7x
# faster; on an AVX-512 Xeon (Rocket Lake cores) NumPy's OpenBLAS ran it in 15 us hot / 18-23 us in the step, the
# loop in 38 / 44. The choice is measured once per CPU, BLAS library, shape and dtype, and kept beside Numba's cache
# (whose directory is named by the kernels' sources, so an edited kernel measures again): a later process reads it
# back and computes the same bits.
_measured_choices: dict[str, bool] = {}
ROUNDS = 15  # calls timed per candidate (the fastest counts): ~1 ms in all at the MLP's shapes
# A kernel of ours replaces BLAS only where clearly faster: on the AVX2 target gemm_nt measured 2 % ahead of
# BLAS here hot, and ran 9 % behind it in the MLP's step, its weight coming from L3
MARGIN = 0.95
# gemm_nt's buffers (a^T packed, the product transposed) are the kernel's for the runtime's life: a bigger pair goes
# to BLAS, whose packing is then spread over more rows anyway (the MLP's 100 x 784 x 512 holds 0.6 MB)
NT_SCRATCH_BYTES = 4 << 20


def _choice_file() -> Path:
    return cache_dir() / "matmul_choice.json"


def few_rows_faster(m: int, k: int, n: int, ta: bool, dtype: DTypeLike) -> bool:
    """Whether _dot_few_rows runs out[m, n] = op(a)[m, k] @ b[k, n] faster than BLAS (_dot_gemm) on this machine."""
    if m * k * n == 0 or np.dtype(dtype) not in (np.float32, np.float64):  # BLAS has no integer GEMM
        return True

    def operands(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
        return a.T if ta else a, rng.standard_normal((k, n)).astype(dtype), np.empty((m, n), dtype)

    return _measured_faster(f"{m}x{k}x{n} ta={ta} {np.dtype(dtype).name}", _dot_few_rows, operands)


def nt_micro_faster(m: int, k: int, n: int, dtype: DTypeLike) -> bool:
    """Whether microgemm.gemm_nt runs out[m, n] = a[m, k] @ b[n, k]^T faster than BLAS on this machine, at the
    BLAS's thread count now (gemm_nt runs on the calling thread alone: the key says how many BLAS had)."""
    threads = blas_threads()
    if m * k * n < 4096 or threads is None or np.dtype(dtype) not in (np.float32, np.float64):
        return False
    if (m + 64) * (k + n) * np.dtype(dtype).itemsize > NT_SCRATCH_BYTES:  # its buffers live with the kernel
        return False

    def operands(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((n, k)).astype(dtype)
        return a, b.T, np.empty((m, n), dtype)

    scratch = functools.cache(lambda: nt_scratch(m, k, n, np.dtype(dtype)))  # made by the warm-up call, if measured
    return _measured_faster(f"{m}x{k}x{n} nt threads={threads} {np.dtype(dtype).name}",
                            lambda a, b, out: gemm_nt(a, b.T, out, *scratch()), operands)


def _measured_faster(shape: str, candidate: Callable[..., None],
                     operands: Callable[[np.random.Generator], tuple[np.ndarray, ...]]) -> bool:
    """Whether ``candidate(a, b, out)`` computes out = a @ b faster than BLAS (_dot_gemm) here: measured on random
    operands (thread CPU time, unmoved by load on other cores: the fastest of ROUNDS calls each after a warm-up
    call; a BLAS on several threads looks faster than it is, and keeps the choice) the first time, read back from
    the cache file after that."""
    key = f"{target_cpu()} {blas_source()} {shape}"
    if key in _measured_choices:
        return _measured_choices[key]
    path = _choice_file()
    try:
        table = json.loads(path.read_text())
    except (OSError, ValueError):
        table = {}
    if not isinstance(table.get(key), bool):
        args = operands(np.random.default_rng(0))
        best = {}
        for fn in (candidate, _dot_gemm):
            fn(*args)  # compiles or loads the kernel, warms the operands
            rounds = []
            for _ in range(ROUNDS):
                start = time.thread_time()
                fn(*args)
                rounds.append(time.thread_time() - start)
            best[fn] = min(rounds)
        table[key] = bool(best[candidate] < MARGIN * best[_dot_gemm])
        try:  # read again and add: another process may have added its own
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                table = {**json.loads(path.read_text()), key: table[key]}
            except (OSError, ValueError):
                pass
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")  # one writer each
            tmp.write_text(json.dumps(table, indent=1, sort_keys=True))
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache: the choice holds for this process
    _measured_choices[key] = table[key]
    return table[key]


@njit
def _batched_dot(a, b, out):
    for i in range(out.shape[0]):
        out[i] = np.dot(a[i], b[i])


@register_kernel("matmul", "numba")
def _matmul(ctx: KernelCtx) -> KernelFn:
    ta, tb, alpha = ctx.attrs["transpose_a"], ctx.attrs["transpose_b"], ctx.attrs["alpha"]
    batched = len(ctx.out_descs[0].shape) > 2
    dot = _dot_gemm if ctx.out_descs[0].dtype.np in (np.float32, np.float64) else _dot

    def kernel(ins, outs):
        a, b, out = ins[0], ins[1], outs[0]
        if batched:  # fold the batch axes into one
            a = a.reshape(-1, *a.shape[-2:])
            b = b.reshape(-1, *b.shape[-2:])
            a = a.transpose(0, 2, 1) if ta else a
            b = b.transpose(0, 2, 1) if tb else b
            _batched_dot(np.ascontiguousarray(a), np.ascontiguousarray(b), out.reshape(-1, *out.shape[-2:]))
        else:
            dot(a.T if ta else a, b.T if tb else b, out)  # a transpose is a free F-order view for BLAS
        if alpha != 1.0:
            out *= alpha

    if batched or alpha != 1.0:
        return kernel
    m, n = ctx.out_descs[0].shape
    k, dtype = ctx.in_descs[0].shape[0 if ta else 1], ctx.out_descs[0].dtype.np
    if tb and not ta and nt_micro_faster(m, k, n, dtype):  # a dense layer's x W^T
        scratch = nt_scratch(m, k, n, dtype)

        def nt(ins, outs):
            gemm_nt(ins[0], ins[1], outs[0], *scratch)

        return fusable(nt, lambda ins, outs: FusedCall(gemm_nt, (ins[0], ins[1], outs[0], *map(Owned, scratch))))
    if (m <= FEW_ROWS and n >= LONG_ROWS and not tb  # b's rows contiguous: see _dot_few_rows
            and few_rows_faster(m, k, n, ta, dtype)):
        def few_rows(ins, outs):
            _dot_few_rows(ins[0].T if ta else ins[0], ins[1], outs[0])

        return fusable(few_rows, lambda ins, outs: FusedCall(_dot_few_rows, (ins[0].T if ta else ins[0], ins[1],
                                                                            outs[0])))
    return fusable(kernel, lambda ins, outs: FusedCall(dot, (ins[0].T if ta else ins[0], ins[1].T if tb else ins[1],
                                                            outs[0])))


@njit
def _bias_add(a, b, out):
    # a, out: (outer, channels, inner); b: (channels,)
    for i in range(a.shape[0]):
        for c in range(a.shape[1]):
            bc = b[c]
            for k in range(a.shape[2]):
                out[i, c, k] = a[i, c, k] + bc


@njit
def _bias_add_rows(a, b, out):
    # a, out: (outer, channels), the bias on the last axis (dense's N x C): the inner loop vectorizes
    for i in range(a.shape[0]):
        for c in range(a.shape[1]):
            out[i, c] = a[i, c] + b[c]


@register_kernel("bias_add", "numba")
def _bias_add_factory(ctx: KernelCtx) -> KernelFn:
    shape = ctx.in_descs[0].shape
    axis = ctx.attrs["axis"] % len(shape)
    as3 = (int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:])))
    if as3[2] == 1:  # an inner loop of length 1 would not vectorize (12x slower at 100 x 512)
        as2 = as3[:2]

        def rows(ins, outs):
            _bias_add_rows(ins[0].reshape(as2), ins[1], outs[0].reshape(as2))

        return fusable(rows, lambda ins, outs: FusedCall(_bias_add_rows, (ins[0].reshape(as2), ins[1],
                                                                          outs[0].reshape(as2))))

    def kernel(ins, outs):
        _bias_add(ins[0].reshape(as3), ins[1], outs[0].reshape(as3))

    return fusable(kernel, lambda ins, outs: FusedCall(_bias_add, (ins[0].reshape(as3), ins[1], outs[0].reshape(as3))))


@njit
def row_max(x, r):
    m = x[r, 0]
    for c in range(1, x.shape[1]):
        v = x[r, c]
        if v > m or v != v:  # a NaN anywhere makes the row NaN, as in NumPy
            m = v
    return m


@njit
def softmax_row(x, y, r):
    """Row r of softmax(x) into y; returns (max, sum of exp(x - max)) for a log-sum-exp."""
    m = row_max(x, r)
    s = 0.0
    for c in range(x.shape[1]):
        e = _m.exp(x[r, c] - m)
        y[r, c] = e
        s += e
    for c in range(x.shape[1]):
        y[r, c] /= s
    return m, s


@njit
def _softmax_rows(x, y):
    for r in range(x.shape[0]):
        softmax_row(x, y, r)


@njit
def _softmax_grad_rows(y, dy, dx):
    for r in range(y.shape[0]):
        dot = 0.0
        for c in range(y.shape[1]):
            dot += dy[r, c] * y[r, c]
        for c in range(y.shape[1]):
            dx[r, c] = y[r, c] * (dy[r, c] - dot)


@njit
def first_out_of_range(ids, n):
    """The position of the first of the (1-D) ``ids`` outside [0, n), or -1: Numba does not bounds-check, so
    every kernel that indexes with data calls this before it reads or writes."""
    for r in range(ids.shape[0]):
        if ids[r] < 0 or ids[r] >= n:
            return r
    return -1


@njit
def _xent_rows(x, labels, prob, out):
    for r in range(x.shape[0]):
        m, s = softmax_row(x, prob, r)
        # -log_softmax: finite for finite logits (-log(prob) is inf once prob underflows)
        out[r] = -((x[r, labels[r]] - m) - _m.log(s))


@njit
def _xent_grad_rows(prob, labels, dy, dx):
    for r in range(prob.shape[0]):
        for c in range(prob.shape[1]):
            dx[r, c] = prob[r, c] * dy[r]
        dx[r, labels[r]] = (prob[r, labels[r]] - 1) * dy[r]  # not p dy - dy: inf - inf for an inf dy


@njit
def _xent_checked(x, labels, prob, out):
    bad = first_out_of_range(labels, x.shape[1])
    if bad < 0:
        _xent_rows(x, labels, prob, out)
    return bad


@njit
def _xent_grad_checked(prob, labels, dy, dx):
    bad = first_out_of_range(labels, prob.shape[1])
    if bad < 0:
        _xent_grad_rows(prob, labels, dy, dx)
    return bad


def _rows(desc) -> tuple[int, int]:
    return int(np.prod(desc.shape[:-1])), desc.shape[-1]


@register_kernel("softmax", "numba")
def _softmax(ctx: KernelCtx) -> KernelFn:
    rows = _rows(ctx.in_descs[0])

    def kernel(ins, outs):
        _softmax_rows(ins[0].reshape(rows), outs[0].reshape(rows))

    return kernel


@register_kernel("softmax_grad", "numba")
def _softmax_grad(ctx: KernelCtx) -> KernelFn:
    rows = _rows(ctx.in_descs[0])

    def kernel(ins, outs):
        _softmax_grad_rows(ins[0].reshape(rows), ins[1].reshape(rows), outs[0].reshape(rows))

    return kernel


@register_kernel("sparse_softmax_cross_entropy", "numba")
def _xent(ctx: KernelCtx) -> KernelFn:
    rows = _rows(ctx.in_descs[0])

    def kernel(ins, outs):
        labels = ins[1].reshape(-1)
        check_labels(labels, rows[1], first_out_of_range(labels, rows[1]))
        _xent_rows(ins[0].reshape(rows), labels, outs[0].reshape(rows), outs[1].reshape(-1))

    return fusable(kernel, lambda ins, outs: FusedCall(
        _xent_checked, (ins[0].reshape(rows), ins[1].reshape(-1), outs[0].reshape(rows), outs[1].reshape(-1)), True))


@register_kernel("sparse_softmax_cross_entropy_grad", "numba")
def _xent_grad(ctx: KernelCtx) -> KernelFn:
    rows = _rows(ctx.in_descs[0])

    def kernel(ins, outs):
        labels = ins[1].reshape(-1)
        check_labels(labels, rows[1], first_out_of_range(labels, rows[1]))
        _xent_grad_rows(ins[0].reshape(rows), labels, ins[2].reshape(-1), outs[0].reshape(rows))

    return fusable(kernel, lambda ins, outs: FusedCall(
        _xent_grad_checked, (ins[0].reshape(rows), ins[1].reshape(-1), ins[2].reshape(-1), outs[0].reshape(rows)),
        True))
