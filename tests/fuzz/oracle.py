"""An independent NumPy interpreter of a traced user Job: the oracle of the differential fuzz tests.

It walks ``session.traced_jobs[name].ops`` in order and evaluates each op type with NumPy written here (never
flowlab's kernels). Every blob is a pair (value, error bound): the value is the blob's dtype, computed the way a
correctly rounded implementation would (reductions and transcendental functions in float64, then rounded); the
bound (float64, per element) is how far any sound implementation may be from it because of rounding, summation
order and the propagation of earlier rounding. ``inf`` marks an element whose value the semantics leave open; the
comparison skips it. The semantics chosen (OneFlow's where it says, IEEE elsewhere):

- floats: IEEE arithmetic, NaN propagates through every op (relu, max and argmax included: argmax takes the
  first NaN as the largest); relu(-0.0) is +0.0; softmax is exp(x - max) / sum (a +inf or a NaN in a row makes
  the row NaN); a sum whose partial sums could overflow (the sum of magnitudes exceeds the dtype's max) is open.
- ints (int32): wrap around (two's complement), division truncates toward zero and x / 0 is 0 (flowlab's
  documented rule, C's ``/`` otherwise).
- casts: float to float rounds to nearest; float to int truncates toward zero, and NaN, inf or a value outside
  the int range is open (C leaves it undefined).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

Blob = tuple[np.ndarray, np.ndarray]  # (value in the blob's dtype, float64 error bound; inf: open)
INF = np.inf


def _is_float(a: np.ndarray) -> bool:
    return a.dtype.kind == "f"


def _eps(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).eps)


def _mul0(mag: np.ndarray, err: np.ndarray) -> np.ndarray:
    """mag * err for error terms: a zero error gives zero (an exact inf times an exact value stays exact), an open
    error (inf) stays open even times zero (the open value may be NaN or inf)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(err == 0, 0.0, np.where(np.isinf(err), INF, np.where(mag == 0, 0.0, mag * err)))


def _clean(v: np.ndarray, e: np.ndarray) -> np.ndarray:
    """An error on a non-finite value, or a NaN error, is unbounded."""
    e = np.where(np.isnan(e), INF, e)
    if _is_float(v):
        e = np.where(~np.isfinite(v) & (e > 0), INF, e)
    return e


def _finish(r: np.ndarray, e: np.ndarray, dtype: np.dtype, rounding: float = 0.0) -> Blob:
    """Round the float64 result ``r`` to ``dtype``; add ``rounding`` ulps (relative) and flag possible overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.asarray(r).astype(dtype)
        mag = np.abs(np.asarray(r, dtype=np.float64))
        finite = np.isfinite(mag)
        e = e + np.where(finite, rounding * _eps(dtype) * np.where(finite, mag, 0.0), 0.0)
        if rounding:
            e = e + rounding * float(np.finfo(dtype).smallest_subnormal)
        fmax = float(np.finfo(dtype).max)
        e = np.where(finite & (e > 0) & (mag + 2 * e >= fmax), INF, e)
    return v, _clean(v, np.asarray(e, dtype=np.float64))


def _wrap(r: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return np.asarray(r, dtype=np.int64).astype(dtype)  # two's complement wrap-around


# -- elementwise -----------------------------------------------------------------------------------------------
def _binary(kind: str, a: Blob, b: Blob) -> Blob:
    (va, ea), (vb, eb) = a, b
    va, vb = np.broadcast_arrays(va, vb)
    ea, eb = np.broadcast_arrays(ea, eb)
    if not _is_float(va):
        x, y = va.astype(np.int64), vb.astype(np.int64)
        if kind == "div":
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.where(y == 0, 0, np.sign(x) * np.sign(y) * (np.abs(x) // np.where(y == 0, 1, np.abs(y))))
            r = q
        else:
            r = {"add": x + y, "sub": x - y, "mul": x * y}[kind]
        return _wrap(r, va.dtype), np.where((ea > 0) | (eb > 0), INF, 0.0)
    with np.errstate(all="ignore"):
        v = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[kind](va, vb)
        av, bv, out = np.abs(va.astype(np.float64)), np.abs(vb.astype(np.float64)), np.abs(v.astype(np.float64))
        if kind in ("add", "sub"):
            e = ea + eb
        elif kind == "mul":
            e = _mul0(av, eb) + _mul0(bv, ea) + _mul0(ea, eb)
        else:  # |x/y - (x+dx)/(y+dy)| <= (dx + |x/y| dy) / (|y| - dy)
            num = ea + _mul0(out, eb)
            e = np.where(num == 0, 0.0, np.where(bv > eb, num / np.where(bv > eb, bv - eb, 1.0), INF))
    # + - * / are correctly rounded in IEEE arithmetic: an implementation computes the same value
    return v, _clean(v, _finish(v, e, v.dtype)[1])


def _monotone(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f in float64 and how far f moves on [x - e, x + e], for f monotone on its domain."""
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        r = f(x64)
        lo, hi = f(x64 - e), f(x64 + e)
        spread = np.maximum(np.abs(hi - r), np.abs(lo - r))
        out_of_domain = (np.isnan(lo) | np.isnan(hi)) & ~np.isnan(r)
        spread = np.where(e == 0, 0.0, np.where(out_of_domain | np.isinf(e), INF, spread))
    return r, spread


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


_TRANSCENDENTAL = {"sigmoid": _sigmoid, "tanh": np.tanh, "exp": np.exp, "log": np.log}


def _unary(kind: str, a: Blob, attrs: dict[str, Any]) -> Blob:
    x, e = a
    if not _is_float(x):
        x64 = x.astype(np.int64)
        r = {"negative": -x64, "square": x64 * x64, "sign": np.sign(x64), "abs": np.abs(x64),
             "relu": np.maximum(x64, 0)}[kind]
        return _wrap(r, x.dtype), np.where(e > 0, INF, 0.0)
    with np.errstate(all="ignore"):
        if kind in _TRANSCENDENTAL:
            r, spread = _monotone(_TRANSCENDENTAL[kind], x, e)
            v, ev = _finish(r, spread, x.dtype, rounding=4.0)
            if kind in ("sigmoid", "exp"):  # below the normal range an implementation may flush to zero
                ev = np.where(np.isfinite(ev), ev + float(np.finfo(x.dtype).tiny), ev)
            return v, ev
        if kind == "gelu":  # 0.5 x (1 + erf(x / sqrt 2)), OneFlow's exact GELU; |gelu'| < 1.13
            r = 0.5 * x.astype(np.float64) * (1 + special.erf(x.astype(np.float64) / np.sqrt(2.0)))
            return _finish(r, 1.13 * e + float(np.finfo(x.dtype).tiny), x.dtype, rounding=4.0)
        if kind == "relu":  # x > 0 ? x : 0, NaN kept
            v = np.where(np.isnan(x), x, np.where(x > 0, x, np.zeros_like(x)))
            return v, _clean(v, e.copy())
        if kind == "leaky_relu":
            alpha = x.dtype.type(attrs["alpha"])
            v = np.where(x > 0, x, alpha * x).astype(x.dtype)
            return _finish(v, e * max(1.0, abs(float(alpha))), x.dtype, rounding=1.0)
        if kind == "negative":
            return -x, e.copy()
        if kind == "abs":
            return np.abs(x), e.copy()
        if kind == "square":
            v = x * x
            ax = np.abs(x.astype(np.float64))
            return v, _clean(v, 2 * _mul0(ax, e) + e * e)
        if kind == "sign":
            v = np.sign(x)
            return v, np.where((e > 0) & (np.abs(x) <= e), INF, 0.0)
        if kind == "sqrt":
            r, spread = _monotone(np.sqrt, x, e)
            return np.sqrt(x), _clean(np.sqrt(x), spread)
        if kind == "reciprocal":
            v = (1 / x).astype(x.dtype)
            ax = np.abs(x.astype(np.float64))
            bound = np.where(ax > e, e / np.where(ax > e, (ax - e) ** 2, 1.0), INF)
            return v, _clean(v, np.where(e == 0, 0.0, bound))
    raise NotImplementedError(kind)


# -- reductions ------------------------------------------------------------------------------------------------
def _axes(axis: Any, rank: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(rank))
    return tuple(sorted(a % rank for a in ((axis,) if isinstance(axis, int) else axis)))


def _out_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


def _sum_with_error(x: np.ndarray, e: np.ndarray, axes: tuple[int, ...], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Sum in float64 over ``axes`` and its bound for any summation order in x's dtype."""
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        finite = np.isfinite(x64)
        r = x64.sum(axis=axes)
        mag = np.where(finite, np.abs(x64), 0.0).sum(axis=axes)
        has_special = (~finite).any(axis=axes)
        fmax = float(np.finfo(x.dtype).max)
        bound = e.sum(axis=axes) + np.where(has_special, 0.0, n * _eps(x.dtype) * mag)
        bound = np.where(mag >= fmax, INF, bound)  # a partial sum may overflow in some order
    return r, bound


def _reduce(kind: str, a: Blob, attrs: dict[str, Any], out_shape: tuple[int, ...]) -> Blob:
    x, e = a
    axes = _axes(attrs["axis"], x.ndim)
    n = int(np.prod([x.shape[i] for i in axes]))
    if kind == "reduce_max":
        v = np.max(x, axis=axes)  # NaN propagates
        return v.reshape(out_shape), _clean(v, e.max(axis=axes)).reshape(out_shape)
    if not _is_float(x):
        r = x.astype(np.int64).sum(axis=axes)
        return _wrap(r, x.dtype).reshape(out_shape), np.where(e.max(axis=axes) > 0, INF, 0.0).reshape(out_shape)
    r, bound = _sum_with_error(x, e, axes, n)
    if kind == "reduce_mean":
        r, bound = r / n, bound / n
    v, ev = _finish(r, bound, x.dtype, rounding=1.0)
    return v.reshape(out_shape), ev.reshape(out_shape)


def _argmax(a: Blob) -> Blob:
    x, e = a
    v = np.argmax(x, axis=-1).astype(np.int32)  # NaN counts as the largest (the first NaN)
    best = np.take_along_axis(x, v[..., None].astype(np.int64), axis=-1)
    best_e = np.take_along_axis(e, v[..., None].astype(np.int64), axis=-1)
    with np.errstate(all="ignore"):
        others = np.ones(x.shape, bool)
        np.put_along_axis(others, v[..., None].astype(np.int64), False, axis=-1)
        close = others & (x.astype(np.float64) + e >= best.astype(np.float64) - best_e)
        open_ = ((e > 0).any(axis=-1) & close.any(axis=-1)) | ~np.isfinite(e).all(axis=-1)
    shape = x.shape[:-1] or (1,)
    return v.reshape(shape), np.where(open_, INF, 0.0).reshape(shape)


def _softmax(a: Blob) -> Blob:
    x, e = a
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        z = np.exp(x64 - x64.max(axis=-1, keepdims=True))
        r = z / z.sum(axis=-1, keepdims=True)
        row_e = e.max(axis=-1, keepdims=True)
        bound = np.where(row_e == 0, 0.0, np.abs(r) * np.expm1(2 * row_e))
        bound = bound + x.shape[-1] * 4 * _eps(x.dtype) * np.abs(np.nan_to_num(r))
        bound = np.where(np.isfinite(row_e), bound, INF) + float(np.finfo(x.dtype).tiny)
    return _finish(r, bound, x.dtype)


def _sigmoid_xent(logits: Blob, labels: Blob) -> Blob:
    """OneFlow's stable form max(x, 0) - x z + log(1 + exp(-|x|)); d/dx is sigmoid(x) - z, d/dz is -x."""
    (x, ex), (z, ez) = logits, labels
    with np.errstate(all="ignore"):
        x64, z64 = x.astype(np.float64), z.astype(np.float64)
        r = np.maximum(x64, 0) - x64 * z64 + np.log1p(np.exp(-np.abs(x64)))
        bound = _mul0(1 + np.abs(z64), ex) + _mul0(np.abs(x64), ez) + _mul0(ex, ez)
        scale = np.abs(np.maximum(x64, 0)) + np.abs(x64 * z64) + 1.0
        bound = bound + np.where(np.isfinite(scale), 4 * _eps(x.dtype) * scale, 0.0)
    return _finish(r, bound, x.dtype)


def _matmul(a: Blob, b: Blob, attrs: dict[str, Any]) -> Blob:
    (va, ea), (vb, eb) = a, b
    if attrs["transpose_a"]:
        va, ea = np.swapaxes(va, -1, -2), np.swapaxes(ea, -1, -2)
    if attrs["transpose_b"]:
        vb, eb = np.swapaxes(vb, -1, -2), np.swapaxes(eb, -1, -2)
    with np.errstate(all="ignore"):
        # explicit products, not BLAS: IEEE specials (0 * inf = NaN) must follow the definition
        pa, pb = va.astype(np.float64)[..., :, :, None], vb.astype(np.float64)[..., None, :, :]
        pea, peb = ea[..., :, :, None], eb[..., None, :, :]
        prods = pa * pb
        k = va.shape[-1]
        finite = np.isfinite(prods)
        r = prods.sum(axis=-2)
        mag = np.where(finite, np.abs(prods), 0.0).sum(axis=-2)
        prop = (_mul0(np.abs(pa), peb) + _mul0(np.abs(pb), pea) + _mul0(pea, peb)).sum(axis=-2)
        fmax = float(np.finfo(va.dtype).max)
        bound = prop + np.where((~finite).any(axis=-2), 0.0, k * _eps(va.dtype) * mag)
        bound = np.where(mag >= fmax, INF, bound)
        alpha = attrs["alpha"]
        r, bound = r * alpha, bound * abs(alpha)
    return _finish(r, bound, va.dtype, rounding=0.0 if alpha == 1.0 else 2.0)


def _cast(a: Blob, dtype: np.dtype) -> Blob:
    x, e = a
    if dtype.kind == "f":  # a conversion is correctly rounded: every implementation gives the same value
        return _finish(x.astype(np.float64), e, dtype)
    if x.dtype.kind != "f":
        return x.astype(dtype), e.copy()
    info = np.iinfo(dtype)
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        ok = np.isfinite(x64) & (x64 > info.min - 1) & (x64 < info.max + 1)
        v = np.where(ok, np.trunc(np.where(ok, x64, 0)), 0).astype(dtype)
        moves = (np.trunc(x64 - e) != np.trunc(x64)) | (np.trunc(x64 + e) != np.trunc(x64))
    return v, np.where(ok & ~((e > 0) & moves), 0.0, INF)


# -- the interpreter -------------------------------------------------------------------------------------------
def _like_pair(f: Callable[[np.ndarray], np.ndarray], a: Blob) -> Blob:
    return f(a[0]), f(a[1])


def _eval(op: Any, ins: dict[str, list[Blob]], out_descs: list[Any]) -> list[Blob]:
    t, attrs = op.op_type, op.attrs
    x = next(iter(ins.values()))[0] if ins else None
    if t.startswith("broadcast_") and t != "broadcast_like":
        return [_binary(t.removeprefix("broadcast_"), ins["x"][0], ins["y"][0])]
    if t in ("scalar_add", "scalar_mul"):
        v = x[0]
        operand = np.full((1,), attrs["operand"]).astype(v.dtype)
        return [_binary("add" if t == "scalar_add" else "mul", x, (operand, np.zeros(1)))]
    if t in ("relu", "sigmoid", "tanh", "negative", "reciprocal", "exp", "log", "sqrt", "square", "sign", "abs",
             "leaky_relu", "gelu"):
        return [_unary(t, x, attrs)]
    if t in ("reduce_sum", "reduce_mean", "reduce_max"):
        return [_reduce(t, x, attrs, out_descs[0].shape)]
    if t == "argmax":
        return [_argmax(x)]
    if t == "softmax":
        return [_softmax(x)]
    if t == "sigmoid_cross_entropy":
        return [_sigmoid_xent(ins["prediction"][0], ins["label"][0])]
    if t == "matmul":
        return [_matmul(ins["a"][0], ins["b"][0], attrs)]
    if t == "bias_add":
        (va, ea), (vb, eb) = ins["a"][0], ins["b"][0]
        axis = attrs["axis"] % va.ndim
        shape = [1] * va.ndim
        shape[axis] = vb.shape[0]
        return [_binary("add", (va, ea), (vb.reshape(shape), eb.reshape(shape)))]
    if t == "reshape":
        return [_like_pair(lambda a: a.reshape(attrs["shape"]), x)]
    if t == "transpose":
        return [_like_pair(lambda a: np.transpose(a, attrs["perm"]), x)]
    if t == "identity":
        return [_like_pair(np.copy, x)]
    if t == "concat":
        parts = ins["in"]
        return [(np.concatenate([p[0] for p in parts], axis=attrs["axis"]),
                 np.concatenate([p[1] for p in parts], axis=attrs["axis"]))]
    if t == "slice":
        index = tuple(slice(*s) for s in attrs["slice_tup_list"])
        return [_like_pair(lambda a: a[index].copy(), x)]
    if t == "gather":
        (vp, ep), (vi, ei) = ins["in"][0], ins["indices"][0]
        axis = attrs["axis"] % vp.ndim
        if (vi < 0).any() or (vi >= vp.shape[axis]).any():
            raise AssertionError(f"the generator made an out-of-range gather: {vi} on axis {axis} of {vp.shape}")
        v, e = np.take(vp, vi, axis=axis), np.take(ep, vi, axis=axis)
        if (ei > 0).any():  # an open index opens the slices it selects
            shape = (1,) * axis + vi.shape + (1,) * (vp.ndim - axis - 1)
            e = np.where(np.broadcast_to((ei > 0).reshape(shape), e.shape), INF, e)
        return [(v, e)]
    if t == "cast":
        return [_cast(x, np.dtype(out_descs[0].dtype.np))]
    if t in ("zeros_like", "ones_like", "constant"):
        d = out_descs[0]
        value = {"zeros_like": 0, "ones_like": 1}.get(t, attrs.get("value"))
        return [(np.full(d.shape, value, dtype=d.dtype.np), np.zeros(d.shape))]
    if t in ("zero_pad2d", "reflection_pad2d"):
        left, right, top, bottom = attrs["padding"]
        width = ((0, 0), (0, 0), (top, bottom), (left, right))
        mode = "constant" if t == "zero_pad2d" else "reflect"
        return [_like_pair(lambda a: np.pad(a, width, mode=mode), x)]
    raise NotImplementedError(f"the oracle has no rule for op type {t!r}")


def interpret(job: Any, feeds: dict[str, np.ndarray]) -> dict[str, Blob]:
    """Evaluate ``job`` (a traced user Job) on ``feeds`` (input op name -> array); returns op name -> Blob for
    every return op."""
    env: dict[str, Blob] = {}
    results: dict[str, Blob] = {}
    for op in job.ops:
        if op.op_type == "input":
            value = np.asarray(feeds[op.name])
            (lbn,) = op.output_lbns
            env[lbn] = (value, np.zeros(value.shape))
            continue
        ins = {arg: [env[lbn] for lbn in lbns] for arg, lbns in op.inputs.items()}
        if op.op_type == "return":
            results[op.name] = ins["in"][0]
            continue
        out_lbns = op.output_lbns
        outs = _eval(op, ins, [job.blob_descs[lbn] for lbn in out_lbns])
        for lbn, (v, e) in zip(out_lbns, outs):
            desc = job.blob_descs[lbn]
            if v.shape != tuple(desc.shape) or v.dtype != desc.dtype.np:
                raise AssertionError(f"{op.name} ({op.op_type}): the oracle made {v.dtype}{list(v.shape)}, "
                                     f"flowlab inferred {desc}")
            env[lbn] = (v, np.asarray(e, dtype=np.float64))
    return results


def mismatches(actual: np.ndarray, expected: Blob) -> str | None:
    """None when ``actual`` agrees with the oracle's blob; otherwise what differs, for the failure message."""
    v, e = expected
    actual = np.asarray(actual)
    if actual.shape != v.shape or actual.dtype != v.dtype:
        return f"got {actual.dtype}{list(actual.shape)}, expected {v.dtype}{list(v.shape)}"
    checked = np.isfinite(e)
    if _is_float(v):
        with np.errstate(all="ignore"):
            a64, v64 = actual.astype(np.float64), v.astype(np.float64)
            slack = 2 * e + _eps(v.dtype) * np.where(np.isfinite(v64), np.abs(v64), 0.0)
            same = np.where(np.isnan(v64), np.isnan(a64),
                            np.where(np.isinf(v64), a64 == v64, np.abs(a64 - v64) <= slack))
    else:
        same = actual == v
    bad = checked & ~same
    if not bad.any():
        return None
    where = [tuple(int(i) for i in idx) for idx in np.argwhere(bad)[:5]]
    pairs = ", ".join(f"{w}: got {actual[w]!r}, expected {v[w]!r} (+-{e[w]:.3g})" for w in where)
    return f"{int(bad.sum())} of {v.size} elements differ; {pairs}"
