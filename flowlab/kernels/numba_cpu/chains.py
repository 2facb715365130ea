"""Chains (kernels/registry.py): a convolution with the elementwise ops after it, and its gradients with the ops
before them, run sample by sample in one kernel while the sample's planes are in cache.

The Job keeps OneFlow's ops (conv2d, bias_add, relu, max_pool2d and their gradients) and every one of their
registers is written, with the bits its own kernel writes: only the order of the work changes. A fused segment
(replay/fused.py) that meets a conv's call followed by its bias_add (and relu, and a 2x2 max pool) on the conv's
output runs ``_conv_chain`` in their place: per sample the conv's GEMM writes its output planes (50-100 KB at
LeNet's convs), then the bias, the relu and the pool read them from L2 instead of four passes over the whole
batch's 5-10 MB. Backwards, a 2x2 max pool's gradient, the relu's gradient, the bias gradient (a sum over the
batch) and one of the conv's gradients (data or filter), in the schedule's order, run as ``_conv_grad_chain``:
the relu gradient of a sample is read by the others while it is in cache. (Both conv gradients in one chain, two
GEMMs a sample with a 627 KB column buffer each at LeNet's conv2, ran slower than the chain with one of them and
the other on its own.) The filter gradient is summed in the chain's own buffer and copied at the end: the Plan
may have given its register a block the chain still reads.

Why the bits are the same: the elementwise ops compute each element by the same expression as their kernels
(math.py, nn.py, cnn.py); the bias gradient adds the samples' blocks in sample order and then sums each channel
as reduce.py's ``_sum_middle`` does; the filter gradient accumulates the samples' GEMMs in sample order (beta 1)
as conv.py's loop does; every GEMM gets the same operands. Registers may share memory (the Plan reuses a block
once its register is dead: at LeNet the relu writes over the conv's output, the pool over the bias_add's), so a
chain is taken only where running sample by sample keeps the order of every two accesses to the same bytes of
which one writes (``_sample_ordered``): an op's sample s may meet a later op's sample s' only where s <= s'.
The replay proof (tests/replay/test_replay_proof.py) compares the result with the protocol's bit for bit, and
tests/ops/test_conv_chains.py each chain with its ops run one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..registry import FusedCall, Owned, register_chain
from . import cnn, conv, nn, reduce
from . import math as elementwise
from ._numba import njit
from .conv import OC, OH, OW, N

# (the kernels by module: a dispatcher imported by name would be listed twice where tests/runtime/test_tiered.py lists
# the compiled ones)
POOL, BIAS, DATA, FILTER = 1, 2, 4, 8  # _conv_grad_chain's stages


@njit
def _conv_chain(x, w, y, xp, cols, g, b, z, r, r3, q3, stages):
    """conv2d -> bias_add (z) [-> relu (r) [-> 2x2 max pool (q3)]], sample by sample; stages: 1, 2 or 3 ops
    after the conv."""
    o, p = g[OC], g[OH] * g[OW]
    for s in range(g[N]):
        conv.conv_sample(x, w, y, xp, cols, g, s)
        lo = s * o * p
        for c in range(o):
            bc = b[c]
            yv, zv = y[lo + c * p:], z[lo + c * p:]  # views indexed from 0: no wraparound test, the loop vectorizes
            for k in range(p):
                zv[k] = yv[k] + bc  # nn.py's _bias_add
        if stages >= 2:
            zv, rv = z[lo:], r[lo:]
            for k in range(o * p):
                rv[k] = 0 if zv[k] < 0 else zv[k]  # math.py's _relu
        if stages >= 3:
            cnn._max_pool_2x2(r3[s * o:(s + 1) * o], q3[s * o:(s + 1) * o])


@njit
def _conv_grad_chain(x3, dy3, dr3, r, dr, dz, db, acc, w, dx, dxp, dcols, dg, xin, dw, dw_sum, fxp, fcols, fg, n,
                     planes, stages):
    """[2x2 max pool grad (dr3) ->] relu grad (dz) [-> bias grad (db)] [-> conv data grad (dx)] [-> conv filter
    grad (dw)], sample by sample; ``stages`` says which of the bracketed ones run (POOL | BIAS | DATA | FILTER)."""
    block = dz.size // n
    af = acc.ravel()
    if stages & FILTER:  # the filter gradient is summed in dw_sum, then copied into dw (its block may be r's)
        for i in range(dw_sum.size):
            dw_sum[i] = 0.0
    for s in range(n):
        if stages & POOL:
            cnn._max_pool_2x2_grad(x3[s * planes:(s + 1) * planes], dy3[s * planes:(s + 1) * planes],
                               dr3[s * planes:(s + 1) * planes])
        lo = s * block
        rv, drv, dzv = r[lo:], dr[lo:], dz[lo:]
        for k in range(block):
            dzv[k] = drv[k] if rv[k] > 0 else 0  # math.py's _relu_grad
        if stages & BIAS:  # reduce.py's _sum_middle: the samples' blocks added in sample order
            if s == 0:
                for k in range(block):
                    af[k] = dzv[k]
            else:
                for k in range(block):
                    af[k] += dzv[k]
        if stages & DATA:
            conv.data_grad_sample(dz, w, dx, dxp, dcols, dg, s)
        if stages & FILTER:
            conv.filter_grad_sample(dz, xin, dw_sum, fxp, fcols, fg, s)
    if stages & BIAS:  # ... then each channel's row, as _sum_middle
        p = block // planes
        for c in range(planes):
            ar = af[c * p:]
            t = ar[0]
            for i in range(1, p):
                t += ar[i]
            db[c] = t
    if stages & FILTER:
        for i in range(dw.size):
            dw[i] = dw_sum[i]


def _span(a: np.ndarray) -> tuple[int, int]:
    return a.ctypes.data, a.ctypes.data + a.nbytes


class _Access(NamedTuple):
    """What the op at ``op`` (its place in the chain) reads or writes of sample s: bytes [base + s * stride,
    base + s * stride + length); stride 0: the whole array, on every sample."""

    op: int
    write: bool
    base: int
    stride: int
    length: int
    after: bool = False  # done once all samples ran (the chain's last writes of the gradients it accumulates)


def _per_sample(op: int, write: bool, a: np.ndarray, n: int) -> _Access:
    return _Access(op, write, a.ctypes.data, a.nbytes // n, a.nbytes // n)


def _whole(op: int, write: bool, a: np.ndarray, after: bool = False) -> _Access:
    return _Access(op, write, a.ctypes.data, 0, a.nbytes, after)


def _sample_ordered(accesses: Sequence[_Access], n: int) -> bool:
    """Whether running the ops sample by sample (sample 0's ops in order, then sample 1's, ...) orders every two
    accesses to the same bytes, one of them a write, as running each op over the whole batch does: there, all of
    an earlier op's samples come before a later op's; here, an earlier op's sample s comes before a later op's
    sample s' only if s <= s'. Accesses of one op keep their order in both (its samples in order)."""
    for i, a in enumerate(accesses):
        for b in accesses[i + 1:]:
            if a.op == b.op or not (a.write or b.write):
                continue
            early, late = (a, b) if a.op < b.op else (b, a)
            e_end = early.base + early.stride * (n - 1) + early.length
            l_end = late.base + late.stride * (n - 1) + late.length
            if e_end <= late.base or l_end <= early.base:
                continue  # the arrays do not meet
            if late.after:  # after every sample of every op, as after every earlier op
                continue
            if early.after:  # after the later op's samples, where the whole batch ran it before them
                return False
            for s_late in range(n):
                lo = late.base + late.stride * s_late
                hi = lo + late.length
                if early.stride == 0:
                    last = n - 1 if early.base < hi and lo < early.base + early.length else -1
                else:  # the last sample of the early op whose bytes meet [lo, hi)
                    last = min(n - 1, (hi - 1 - early.base) // early.stride)
                    if last < 0 or early.base + early.stride * last + early.length <= lo:
                        last = -1
                if last > s_late:
                    return False
    return True


def _same(a: object, b: np.ndarray) -> bool:
    """Whether ``a`` is an array over exactly b's bytes, as b's dtype."""
    return isinstance(a, np.ndarray) and a.dtype == b.dtype and _span(a) == _span(b)


def _none(like: np.ndarray, ndim: int) -> Owned:
    """An empty array standing for a stage the chain does not run."""
    return Owned(np.empty((0,) * ndim, like.dtype))


def _forward(calls: Sequence[FusedCall], index: int) -> tuple[FusedCall, int] | None:
    x, w, y, xp, cols, g = calls[index].args
    if not isinstance(g, Owned) or index + 1 >= len(calls) or calls[index + 1].fn is not nn._bias_add:
        return None
    geo = g.array
    n, o, p = int(geo[N]), int(geo[OC]), int(geo[OH] * geo[OW])
    a3, b, z3 = calls[index + 1].args
    if not _same(a3, y) or a3.shape != (n, o, p) or n == 0 or p == 0:
        return None
    z = z3.reshape(-1)
    r, r3, q3 = _none(y, 1), _none(y, 3), _none(y, 3)
    count = 2
    relu = calls[index + count] if index + count < len(calls) else None
    if relu is not None and relu.fn is elementwise._relu and _same(relu.args[0], z):
        r = calls[index + count].args[1].reshape(-1)
        count += 1
        pool = calls[index + count] if index + count < len(calls) else None
        if pool is not None and pool.fn is cnn._max_pool_2x2 and _same(pool.args[0], r) \
                and pool.args[0].shape == (n * o, int(geo[OH]), int(geo[OW])):
            r3, q3 = pool.args
            count += 1
    accesses = [_per_sample(0, False, x, n), _whole(0, False, w), _per_sample(0, True, y, n),
                _per_sample(1, False, y, n), _whole(1, False, b), _per_sample(1, True, z, n)]
    if count >= 3:
        accesses += [_per_sample(2, False, z, n), _per_sample(2, True, r, n)]
    if count >= 4:
        accesses += [_per_sample(3, False, r, n), _per_sample(3, True, q3, n)]
    if not _sample_ordered(accesses, n):
        return None
    return FusedCall(_conv_chain, (x, w, y, xp, cols, g, b, z, r, r3, q3, count - 1)), count


def _backward(calls: Sequence[FusedCall], index: int) -> tuple[FusedCall, int] | None:
    k, pool = index, None
    if calls[k].fn is cnn._max_pool_2x2_grad:
        pool = calls[k].args
        k += 1
    if k >= len(calls) or calls[k].fn is not elementwise._relu_grad:
        return None
    r, dr, dz = calls[k].args
    if pool is not None and not _same(pool[2], dr):
        return None
    k += 1
    found: dict[int, tuple] = {}
    while k < len(calls):  # the relu gradient's consumers, in the schedule's order
        fn, args = calls[k].fn, calls[k].args
        stage = {reduce._sum_middle: BIAS, conv._conv_data_grad: DATA, conv._conv_filter_grad: FILTER}.get(fn)
        if stage is None or stage <= max(found, default=0) or not _same(args[0], dz):
            break  # (the chain runs them in BIAS, DATA, FILTER order)
        found[stage] = args
        k += 1
        if stage != BIAS:  # one GEMM a sample: data and filter gradients side by side (each with its own 627 KB
            break  # column buffer at LeNet's conv2) ran 2-4 % slower than the chain and the other alone
    grad = found.get(DATA, found.get(FILTER))
    if grad is None:  # no conv gradient: nothing reads the relu gradient while it is in cache
        return None
    geo = grad[5].array
    n, o, p = int(geo[N]), int(geo[OC]), int(geo[OH] * geo[OW])
    if n == 0 or p == 0 or dz.size != n * o * p or (pool is not None and pool[0].shape[0] != n * o):
        return None
    if BIAS in found and found[BIAS][0].shape != (n, o, p):
        return None
    x3, dy3, dr3 = pool if pool is not None else (_none(dz, 3),) * 3
    db, acc = found[BIAS][1:] if BIAS in found else (_none(dz, 1), _none(dz, 2))
    no_conv = (None, *(_none(dz, 1),) * 4, Owned(np.zeros(19, np.int64)))  # a conv gradient the chain skips
    _, w, dx, dxp, dcols, dg = found.get(DATA, no_conv)
    _, xin, dw, fxp, fcols, fg = found.get(FILTER, no_conv)
    dw_sum = Owned(np.empty(dw.size if FILTER in found else 0, dz.dtype))
    accesses = [_per_sample(1, False, r, n), _per_sample(1, False, dr, n), _per_sample(1, True, dz, n)]
    if pool is not None:
        accesses += [_per_sample(0, False, x3, n), _per_sample(0, False, dy3, n), _per_sample(0, True, dr3, n)]
    if BIAS in found:
        accesses += [_per_sample(2, False, dz, n), _whole(2, True, db, after=True)]  # acc: the reduce's own
    if DATA in found:
        accesses += [_per_sample(3, False, dz, n), _whole(3, False, w), _per_sample(3, True, dx, n)]
    if FILTER in found:  # summed in the chain's own buffer, then copied: the Plan may reuse dz's or r's block
        accesses += [_per_sample(4, False, dz, n), _per_sample(4, False, xin, n), _whole(4, True, dw, after=True)]
    if not _sample_ordered(accesses, n):
        return None
    stages = (POOL if pool is not None else 0) | sum(found)
    return FusedCall(_conv_grad_chain, (x3, dy3, dr3, r.reshape(-1), dr.reshape(-1), dz.reshape(-1), db, acc, w,
                                        dx, dxp, dcols, dg, xin, dw, dw_sum, fxp, fcols, fg, n, o, stages)), k - index


register_chain(conv._conv_fwd, _forward)
register_chain(cnn._max_pool_2x2_grad, _backward)
register_chain(elementwise._relu_grad, _backward)
