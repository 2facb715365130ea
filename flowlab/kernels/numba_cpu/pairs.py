"""Two consecutive acts of a fused segment as one pass over their arrays, where the second only reads what the first
just wrote, element by element: a copy of a copy (the pushed x: ForeignInput's copy, or on several devices the
boxing copy of a device's rows of it, then the train job's Input copy), bias_add then relu (a dense layer's
activation), relu_grad then its rows summed (the bias gradient), and a data-parallel weight gradient's last boxing
act then the momentum update reading it (the reduce-scatter's add under distributed_split, the all-gather's copy of
both halves otherwise: the lanes run a boxing act beside its reader, replay/lane_order.py ``to_reader_lanes``), so
the update no longer re-reads 0.8-1.6 MB just written.

Why: at batch 100 each of these arrays (200-313 KB) comes from L3 in the step (its 8.5 MB leave nothing in the
1 MB L2), and the second pass re-reads what the first wrote. One pass reads the source once and writes both
outputs: the two copies of x took 65 us cold as two loops and 43 as one (313 KB each, one thread).

Both outputs keep every byte the two kernels would write, in the same arithmetic per element (the same float32
expressions, the same row order of the sum), so a segment that uses a pair stays bit-identical to the protocol
running the two acts (tests/replay/test_fused_pairs.py, tests/replay/test_replay_proof.py). A pair is made only where
that is
sure: one dtype, contiguous arrays, and outputs that do not overlap the inputs they are read after (an
in-place output must be exactly its input, or a sum's output lie on the first row it reads before writing).
``replay/fused.py`` asks ``pair_call`` for each two consecutive acts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..registry import External, FusedCall
from . import array, boxing, math, nn, optimizer, reduce  # modules, not their kernels: a kernel is listed once
from ._numba import njit


@njit
def _copy_twice(x, y, z):
    """y = x, then z = y (as two copy_flat), in one pass."""
    x, y, z = x.ravel(), y.ravel(), z.ravel()
    for i in range(y.size):
        v = x[i]
        y[i] = v
        z[i] = v


@njit
def _bias_add_relu_rows(a, b, t, y):
    """t = a + b (bias on the last axis, as _bias_add_rows), then y = relu(t) (as _relu), in one pass."""
    for i in range(a.shape[0]):
        for c in range(a.shape[1]):
            v = a[i, c] + b[c]
            t[i, c] = v
            y[i, c] = 0 if v < 0 else v


@njit
def _bias_add_relu_rows_in_place(a, b, t):
    """_bias_add_relu_rows with the relu written over a: a kernel with y and a both written would fail the
    vectorizer's overlap check at run time and go scalar (2.2x slower)."""
    for i in range(a.shape[0]):
        for c in range(a.shape[1]):
            v = a[i, c] + b[c]
            t[i, c] = v
            a[i, c] = 0 if v < 0 else v


@njit
def _relu_grad_sum_rows(y, dy, dx, out, acc):
    """dx = relu_grad(y, dy) (as _relu_grad), then out = dx summed over rows in row order in the sum's own
    accumulator ``acc`` (float64 for floats), as _sum_leading."""
    for c in range(dx.shape[1]):
        dx[0, c] = dy[0, c] if y[0, c] > 0 else 0
        acc[c] = dx[0, c]
    for r in range(1, dx.shape[0]):
        for c in range(dx.shape[1]):
            dx[r, c] = dy[r, c] if y[r, c] > 0 else 0
            acc[c] += dx[r, c]
    for c in range(dx.shape[1]):
        out[c] = acc[c]


@njit
def _momentum_at(w, v, i, s, rate, beta, scale, l1, l2, wd):
    """Element i of _momentum with its gradient ``s`` already loaded: the same float expressions, in order."""
    g = s * scale
    if l1 != 0.0:
        g += l1 * np.sign(w[i])
    if l2 != 0.0:
        g += l2 * w[i]
    wv = w[i]
    v[i] = beta * v[i] - rate * g  # OneFlow's MomentumUpdateFunctor: the decay is not in the momentum
    w[i] = wv + v[i]
    if wd != 0.0:  # a zero decay adds nothing, not 0 * inf = NaN
        w[i] -= rate * wd * wv


@njit
def _add2_momentum(a, b, out, w, v, lr, beta, scale, l1, l2, wd):
    """out = a + b (as box_add2: a reduce-scatter's add), then the momentum update reading out (as _momentum_lr),
    in one pass: the sum is stored for whoever else reads its register, and used from the register file."""
    w, v = w.ravel(), v.ravel()
    rate = lr[0]
    for i in range(out.size):
        s = a[i] + b[i]
        out[i] = s
        _momentum_at(w, v, i, s, rate, beta, scale, l1, l2, wd)


@njit
def _copy_momentum_run(s, d, w, v, rate, beta, scale, l1, l2, wd):
    for i in range(d.size):
        g = s[i]
        d[i] = g
        _momentum_at(w, v, i, g, rate, beta, scale, l1, l2, wd)


@njit
def _copy2_momentum(s0, d0, s1, d1, w, v, lr, beta, scale, l1, l2, wd):
    """d0 = s0, d1 = s1 (as box_copy2: an all-gather of two halves, d0 then d1 the whole gradient), then the
    momentum update reading that gradient (as _momentum_lr), in one pass: a loop per half, over the variable's and
    the momentum's rows of that half (one loop with an offset index did not vectorize: 2x slower)."""
    w, v = w.ravel(), v.ravel()
    n = d0.size
    _copy_momentum_run(s0, d0, w[:n], v[:n], lr[0], beta, scale, l1, l2, wd)
    _copy_momentum_run(s1, d1, w[n:], v[n:], lr[0], beta, scale, l1, l2, wd)


def _span(a: np.ndarray) -> tuple[int, int]:
    start = a.ctypes.data
    return start, start + a.nbytes


def _disjoint(a: Any, b: Any) -> bool:
    """Whether two arguments share no byte (an External is the caller's array: never a memory block's)."""
    if isinstance(a, External) or isinstance(b, External):
        return True
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a1 <= b0 or b1 <= a0


def _same(a: Any, b: Any) -> bool:
    """The same contiguous memory (shapes may differ: a kernel views a blob as it needs)."""
    return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.flags.c_contiguous
            and b.flags.c_contiguous and _span(a) == _span(b) and a.dtype == b.dtype)


def _over_first_row(out: np.ndarray, a: np.ndarray, shape: tuple[int, ...]) -> bool:
    """Whether ``out`` (c,) lies on the first row of ``a`` viewed as ``shape`` (r, c), element c on element c: a
    memory block may reuse a blob read in row 0 for a sum written there, each out[c] stored after a[0, c] is read."""
    return out.ctypes.data == a.ctypes.data and out.dtype == a.dtype and out.size <= shape[1]


def _arrays(*args: Any) -> bool:
    """Register arrays, not the caller's (External) or constants: what a pair other than the copies reads."""
    return all(isinstance(a, np.ndarray) for a in args)


def _contiguous(*arrays: Any) -> bool:
    return all(isinstance(a, External) and a.like.flags.c_contiguous or isinstance(a, np.ndarray)
               and a.flags.c_contiguous for a in arrays)


def _dtype(a: Any) -> np.dtype:
    return a.like.dtype if isinstance(a, External) else a.dtype


def _size(a: Any) -> int:
    return int(a.like.size if isinstance(a, External) else a.size)


def _copies(first: FusedCall, second: FusedCall) -> FusedCall | None:
    x, y = first.args
    y2, z = second.args
    if not (_same(y, y2) and _contiguous(x, y, z) and len({_dtype(x), _dtype(y), _dtype(z)}) == 1
            and _size(x) == _size(y) == _size(z)):
        return None  # a cast converts: the second copy must read what the first stored
    if not (_disjoint(x, y) and _disjoint(x, z) and _disjoint(y, z)):
        return None
    return FusedCall(_copy_twice, (x, y, z))


def _bias_relu(first: FusedCall, second: FusedCall) -> FusedCall | None:
    a, b, t = first.args
    t2, y = second.args
    if not (_arrays(a, b, t, y) and _same(t, t2) and _contiguous(a, b, t, y) and y.size == t.size
            and len({a.dtype, b.dtype, t.dtype, y.dtype}) == 1):
        return None
    if not (_disjoint(y, t) and _disjoint(y, b) and (_same(y, a) or _disjoint(y, a)) and _disjoint(t, b)
            and (_same(t, a) or _disjoint(t, a))):
        return None  # y written in place of a is safe: each element of a is read before its y is written
    if _same(y, a):
        return FusedCall(_bias_add_relu_rows_in_place, (a, b, t))
    return FusedCall(_bias_add_relu_rows, (a, b, t, y.reshape(t.shape)))


def _relu_grad_sum(first: FusedCall, second: FusedCall) -> FusedCall | None:
    y, dy, dx = first.args
    x, out, acc = second.args
    if not (_arrays(y, dy, dx, out) and _same(dx, x) and x.ndim == 2 and x.shape[0] >= 1
            and _contiguous(y, dy, dx, out) and y.size == dy.size == dx.size
            and len({y.dtype, dy.dtype, dx.dtype, out.dtype}) == 1):
        return None
    if not (_disjoint(out, dx) and all(_disjoint(out, a) or _over_first_row(out, a, x.shape) for a in (y, dy))
            and _disjoint(dx, y) and (_same(dx, dy) or _disjoint(dx, dy))):
        return None
    return FusedCall(_relu_grad_sum_rows, (y.reshape(x.shape), dy.reshape(x.shape), x, out, acc))


def _momentum_pair(fn: Any, sources: tuple[Any, ...], parts: tuple[np.ndarray, ...], second: FusedCall
                   ) -> FusedCall | None:
    """A boxing act writing ``parts`` (in order, one after another: the whole of the update's gradient) from
    ``sources``, then the momentum update reading them: ``fn`` does both. Refused unless every array is a contiguous
    register of one dtype, the parts tile the gradient exactly, and what the pass writes (the parts, the variable,
    its momentum) overlaps nothing else it reads or writes."""
    w, diff, v, lr, *constants = second.args
    arrays = (*sources, *parts, w, diff, v, lr)
    if not (_arrays(*arrays) and _contiguous(*arrays) and len({a.dtype for a in arrays}) == 1):
        return None
    start, end = _span(diff)
    for part in parts:
        if _span(part)[0] != start:
            return None
        start = _span(part)[1]
    if start != end or w.size != diff.size or v.size != diff.size:
        return None
    written = (*parts, w, v)
    if not all(_disjoint(x, y) for k, x in enumerate(written) for y in (*written[k + 1:], *sources, lr)):
        return None
    return FusedCall(fn, (*sources, *parts, w, v, lr, *constants))


def _add_momentum(first: FusedCall, second: FusedCall) -> FusedCall | None:
    a, b, out = first.args
    return _momentum_pair(_add2_momentum, (a, b), (out,), second)


def _copy_momentum(first: FusedCall, second: FusedCall) -> FusedCall | None:
    s0, d0, s1, d1 = first.args
    if not _arrays(s0, s1) or s0.size != d0.size or s1.size != d1.size:
        return None
    pair = _momentum_pair(_copy2_momentum, (s0, s1), (d0, d1), second)
    if pair is None:
        return None
    s0, s1, d0, d1, *rest = pair.args
    return FusedCall(_copy2_momentum, (s0, d0, s1, d1, *rest))


PAIRS: dict[tuple[Any, Any], Callable[[FusedCall, FusedCall], FusedCall | None]] = {
    (array.copy_flat, array.copy_flat): _copies,
    (boxing.box_copy1, array.copy_flat): _copies,  # a device's piece of the pushed batch, then its Input copy
    (nn._bias_add_rows, math._relu): _bias_relu,
    (math._relu_grad, reduce._sum_leading): _relu_grad_sum,
    (boxing.box_add2, optimizer._momentum_lr): _add_momentum,
    (boxing.box_copy2, optimizer._momentum_lr): _copy_momentum,
}


def pair_call(first: FusedCall, second: FusedCall) -> FusedCall | None:
    """One call doing what ``first`` then ``second`` do, bit for bit, or None (see the module's docstring)."""
    if first.checked or second.checked:
        return None
    build = PAIRS.get((first.fn, second.fn))
    return None if build is None else build(first, second)
