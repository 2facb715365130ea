"""Hypothesis strategies of random well-typed programs: one generator per kind of op, each picking earlier
values its op accepts and computing the output's shape and dtype from the op's documented rule."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from .programs import DTYPES, FLOATS, Node, Program, Value


# -- shape rules -------------------------------------------------------------------------------------------------
def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da, db = (a[-i] if i <= len(a) else 1), (b[-i] if i <= len(b) else 1)
        if da != db and 1 not in (da, db):
            return None
        out.append(max(da, db))
    return tuple(reversed(out))


class Values(list):
    """The values made so far, and which of them an op already consumed."""

    def __init__(self, values: list[Value]) -> None:
        super().__init__(values)
        self.used: set[int] = set()


def _pick(draw: Any, vals: Values, pred: Callable[[int, Value], bool]) -> int | None:
    """An earlier value that fits ``pred``; mostly one no op consumed yet, so that few ops are dead code and a
    wrong value reaches a returned blob."""
    idx = [i for i, v in enumerate(vals) if pred(i, v)]
    if not idx:
        return None
    fresh = [i for i in idx if i not in vals.used]
    chosen = draw(st.sampled_from(fresh if fresh and draw(st.integers(0, 4)) else idx))
    vals.used.add(chosen)
    return chosen


def _axis_list(draw: Any, rank: int) -> Any:
    kind = draw(st.sampled_from(["none", "int", "list"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-rank, rank - 1))
    return sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank)))


# -- node generators: each returns (node, output value) or None when no earlier value fits ---------------------
Gen = Callable[[Any, list[Value]], Any]  # (node, value), a list of them, or None


def g_binary(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    fn = draw(st.sampled_from(["add", "subtract", "multiply", "divide"]))
    x = _pick(draw, vals, lambda i, v: True)
    y = _pick(draw, vals, lambda i, v: v.dtype == vals[x].dtype and broadcast(vals[x].shape, v.shape) is not None)
    return Node(fn, (x, y)), Value(broadcast(vals[x].shape, vals[y].shape), vals[x].dtype)


def g_scalar(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    fn = draw(st.sampled_from(["add", "subtract", "multiply", "divide"]))
    x = _pick(draw, vals, lambda i, v: True)
    left = draw(st.booleans())
    if vals[x].dtype == "int32":
        value: float = draw(st.sampled_from([-3, -1, 0, 1, 2, 7]))
    else:
        value = draw(st.sampled_from([0.0, -0.0, 0.5, -2.0, 3.0, 0.1, 1e30, -1e-30]))
    if fn == "divide" and not left and value == 0:
        value = 2 if vals[x].dtype == "int32" else 2.0  # dividing by the constant 0 is a trace-time error
    return Node(f"{fn}_scalar", (x,), (("value", value), ("left", left))), Value(vals[x].shape, vals[x].dtype)


def g_unary(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    x = _pick(draw, vals, lambda i, v: True)
    if vals[x].dtype == "int32":
        fns = ["negative", "square", "sign", "abs", "relu"]
    else:
        fns = ["relu", "sigmoid", "tanh", "negative", "reciprocal", "exp", "log", "sqrt", "square", "sign", "abs",
               "leaky_relu", "gelu"]
    fn = draw(st.sampled_from(fns))
    return Node(fn, (x,)), Value(vals[x].shape, vals[x].dtype)  # no index bound: the values changed


def g_softmax(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    x = _pick(draw, vals, lambda i, v: v.dtype in FLOATS)
    if x is None:
        return None
    rank = len(vals[x].shape)
    axis = draw(st.one_of(st.none(), st.integers(-rank, rank - 1)))
    return Node("softmax", (x,), (("axis", axis),)), vals[x]


def g_xent(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    """Sigmoid cross entropy, OneFlow's stable form max(x, 0) - x z + log(1 + exp(-|x|)). The softmax cross
    entropies are not generated (the oracle has no model of them); tests/ops/test_xent_stability.py and
    test_fuzz_regressions.py pin their log-sum-exp form."""
    logits = _pick(draw, vals, lambda i, v: v.dtype in FLOATS)
    if logits is None:
        return None
    lv = vals[logits]
    labels = _pick(draw, vals, lambda i, v: v.dtype == lv.dtype and v.shape == lv.shape)
    return Node("sigmoid_cross_entropy_with_logits", (labels, logits)), lv


def g_reduce(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    fn = draw(st.sampled_from(("reduce_sum", "reduce_mean", "reduce_max")))
    x = _pick(draw, vals, lambda i, v: fn != "reduce_mean" or v.dtype in FLOATS)
    if x is None:
        return None
    shape = vals[x].shape
    axis, keepdims = _axis_list(draw, len(shape)), draw(st.booleans())
    axes = range(len(shape)) if axis is None else [a % len(shape) for a in ([axis] if isinstance(axis, int) else axis)]
    out = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keepdims else (
        tuple(d for i, d in enumerate(shape) if i not in axes) or (1,))
    return Node(fn, (x,), (("axis", axis), ("keepdims", keepdims))), Value(out, vals[x].dtype)


def g_argmax(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    x = _pick(draw, vals, lambda i, v: True)
    shape = vals[x].shape
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    out = tuple(d for i, d in enumerate(shape) if i != axis % len(shape)) or (1,)
    return Node("argmax", (x,), (("axis", axis),)), Value(out, "int32", index_bound=shape[axis])


def _matmul_out(a: tuple[int, ...], b: tuple[int, ...], ta: bool, tb: bool) -> tuple[int, ...] | None:
    if len(a) < 2 or len(b) < 2:
        return None
    if len(a) > 2 and len(b) == 2 and not ta:  # flow.matmul multiplies every row of a by a 2-D b
        m, k = math.prod(a[:-1]), a[-1]
        k2, n = (b[1], b[0]) if tb else b
        return (*a[:-1], n) if k == k2 else None
    if len(a) != len(b) or a[:-2] != b[:-2]:
        return None
    m, k = (a[-1], a[-2]) if ta else a[-2:]
    k2, n = (b[-1], b[-2]) if tb else b[-2:]
    return (*a[:-2], m, n) if k == k2 else None


def g_matmul(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    a = _pick(draw, vals, lambda i, v: v.dtype in FLOATS and len(v.shape) >= 2)
    if a is None:
        return None
    options = [(b, ta, tb) for b, v in enumerate(vals) if v.dtype == vals[a].dtype
               for ta in (False, True) for tb in (False, True) if _matmul_out(vals[a].shape, v.shape, ta, tb)]
    if not options:
        return None
    b, ta, tb = draw(st.sampled_from(options))
    vals.used.add(b)
    alpha = draw(st.sampled_from([1.0, 1.0, 0.5]))
    out = _matmul_out(vals[a].shape, vals[b].shape, ta, tb)
    kw = (("transpose_a", ta), ("transpose_b", tb), ("alpha", alpha))
    return Node("matmul", (a, b), kw), Value(out, vals[a].dtype)


def g_bias_add(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    options = [(a, b) for a, va in enumerate(vals) for b, vb in enumerate(vals)
               if len(va.shape) >= 2 and va.dtype == vb.dtype and vb.shape == (va.shape[1],)]
    if not options:
        return None
    a, b = draw(st.sampled_from(options))
    vals.used.update((a, b))
    return Node("bias_add", (a, b)), vals[a]


def g_reshape(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    x = _pick(draw, vals, lambda i, v: True)
    shape = vals[x].shape
    kind = draw(st.sampled_from(["reshape", "flatten", "expand_dims", "squeeze"]))
    if kind == "flatten":
        return Node("flatten", (x,)), Value((math.prod(shape),), vals[x].dtype)
    if kind == "expand_dims" and len(shape) < 4:
        axis = draw(st.integers(-len(shape) - 1, len(shape)))
        a = axis % (len(shape) + 1)
        return Node("expand_dims", (x,), (("axis", axis),)), Value((*shape[:a], 1, *shape[a:]), vals[x].dtype)
    if kind == "squeeze" and 1 in shape:
        return Node("squeeze", (x,)), Value(tuple(d for d in shape if d != 1) or (1,), vals[x].dtype)
    n, dims = math.prod(shape), []
    while len(dims) < 3:
        d = draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0]))
        dims.append(d)
        n //= d
        if n == 1 or not draw(st.booleans()):
            break
    new = [*dims, n] if n > 1 or not dims else dims
    if draw(st.booleans()):
        new_kw = list(new)
        new_kw[draw(st.integers(0, len(new) - 1))] = -1
    else:
        new_kw = list(new)
    return Node("reshape", (x,), (("shape", new_kw),)), Value(tuple(new), vals[x].dtype)


def g_transpose(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    x = _pick(draw, vals, lambda i, v: True)
    perm = draw(st.permutations(range(len(vals[x].shape))))
    return Node("transpose", (x,), (("perm", list(perm)),)), Value(tuple(vals[x].shape[p] for p in perm),
                                                                   vals[x].dtype)


def g_concat(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    x = _pick(draw, vals, lambda i, v: True)
    sx = vals[x].shape
    options = [(y, ax) for y, v in enumerate(vals) if v.dtype == vals[x].dtype and len(v.shape) == len(sx)
               for ax in range(len(sx)) if all(a == b for i, (a, b) in enumerate(zip(sx, v.shape)) if i != ax)]
    y, axis = draw(st.sampled_from(options))
    vals.used.add(y)
    shape = list(sx)
    shape[axis] += vals[y].shape[axis]
    axis = draw(st.sampled_from([axis, axis - len(sx)]))
    return Node("concat", (x, y), (("axis", axis),)), Value(tuple(shape), vals[x].dtype)


def g_slice(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    x = _pick(draw, vals, lambda i, v: True)
    spec, shape = [], []
    for d in vals[x].shape:
        bound = st.one_of(st.none(), st.integers(-d - 1, d + 1))
        s = (draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2])))
        n = len(range(*slice(*s).indices(d)))
        if n == 0:
            s, n = (None, None, None), d
        spec.append(s)
        shape.append(n)
    return Node("slice_v2", (x,), (("slice_tup_list", spec),)), Value(tuple(shape), vals[x].dtype)


def g_cast(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    x = _pick(draw, vals, lambda i, v: True)
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    return Node("cast", (x,), (("dtype", dtype),)), Value(vals[x].shape, dtype)


def g_gather(draw: Any, vals: Values) -> list[tuple[Node, Value]] | None:
    p = _pick(draw, vals, lambda i, v: True)
    sp = vals[p].shape
    axis = draw(st.integers(-len(sp), len(sp) - 1))
    a, d = axis % len(sp), sp[axis]
    made = []
    i = _pick(draw, vals, lambda i, v: v.index_bound is not None and v.index_bound <= d)
    if i is None or not draw(st.integers(0, 3)):  # constant indices, in range by construction
        shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
        kw = (("value", draw(st.integers(0, d - 1))), ("dtype", "int32"), ("shape", list(shape)))
        made.append((Node("constant", (), kw), Value(shape, "int32", index_bound=d)))
        i = len(vals)
    si = made[0][1].shape if made else vals[i].shape
    made.append((Node("gather", (p, i), (("axis", axis),)), Value(sp[:a] + si + sp[a + 1:], vals[p].dtype)))
    return made


def g_constant(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    like = _pick(draw, vals, lambda i, v: True)
    shape = draw(st.sampled_from([(1,), vals[like].shape[-1:], vals[like].shape]))
    dtype = vals[like].dtype
    if dtype == "int32":
        value: float = draw(st.sampled_from([0, 1, -5, 2**31 - 1]))
    else:
        value = draw(st.sampled_from([0.0, 1.5, -2.0, float("nan"), float("inf"), float("-inf"), 1e30]))
    return Node("constant", (), (("value", value), ("dtype", dtype), ("shape", list(shape)))), Value(shape, dtype)


def g_like(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    x = _pick(draw, vals, lambda i, v: True)
    fn = draw(st.sampled_from(["identity", "zeros_like", "ones_like"]))
    return Node(fn, (x,)), vals[x] if fn == "identity" else Value(vals[x].shape, vals[x].dtype)


def g_pad(draw: Any, vals: Values) -> tuple[Node, Value] | None:
    x = _pick(draw, vals, lambda i, v: len(v.shape) == 4)
    if x is None:
        return None
    n, c, h, w = vals[x].shape
    if draw(st.booleans()) and h > 1 and w > 1:
        # OneFlow v0.3.4's list: padding[2] pads the height and padding[3] the width, each on both sides.
        top, left = draw(st.integers(0, h - 1)), draw(st.integers(0, w - 1))
        pads, fn, (right, bottom) = [0, 0, top, left], "reflection_pad2d", (left, top)
    else:
        pads, fn = [draw(st.integers(0, 2)) for _ in range(4)], "zero_pad2d"  # v0.4.0's [left, right, top, bottom]
        left, right, top, bottom = pads
    return Node(fn, (x,), (("padding", pads),)), Value((n, c, h + top + bottom, w + left + right), vals[x].dtype)


GENERATORS: dict[str, Gen] = {
    "binary": g_binary, "scalar": g_scalar, "unary": g_unary, "softmax": g_softmax, "reduce": g_reduce,
    "argmax": g_argmax, "matmul": g_matmul, "bias_add": g_bias_add, "reshape": g_reshape,
    "transpose": g_transpose, "concat": g_concat, "slice": g_slice, "cast": g_cast, "gather": g_gather,
    "constant": g_constant, "like": g_like, "pad": g_pad, "xent": g_xent,
}
WEIGHTS = {"binary": 4, "scalar": 2, "unary": 4, "reduce": 2, "matmul": 2, "reshape": 2, "transpose": 1,
           "concat": 1, "slice": 1, "cast": 1, "gather": 1, "constant": 1, "like": 1, "softmax": 1, "argmax": 1,
           "bias_add": 1, "pad": 1, "xent": 1}
KINDS = [k for k, w in WEIGHTS.items() for _ in range(w)]


@st.composite
def shapes(draw: Any, base: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """A shape of rank 1-4 with small dims; given ``base``, often one that broadcasts against it."""
    if base is not None and draw(st.booleans()):
        keep = draw(st.integers(1, len(base)))
        return tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in base[-keep:])
    return tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))


@st.composite
def programs(draw: Any, max_nodes: int = 12, kinds: tuple[str, ...] | None = None) -> Program:
    n_in = draw(st.integers(1, 3))
    first = draw(shapes())
    placeholders = [Value(first, draw(st.sampled_from(["float32"] * 6 + ["float64", "int32"])))]
    for _ in range(n_in - 1):
        placeholders.append(Value(draw(shapes(first)), draw(st.sampled_from(["float32"] * 6 + ["float64",
                                                                                                "int32"]))))
    vals, nodes = Values(placeholders), []
    pool = [k for k in KINDS if kinds is None or k in kinds]
    target = draw(st.integers(1, max_nodes))
    while len(nodes) < target:
        made = GENERATORS[draw(st.sampled_from(pool))](draw, vals)
        if made is None:  # no earlier value fits this op: draw another
            continue
        for node, value in made if isinstance(made, list) else [made]:
            nodes.append(node)
            vals.append(value)
    last = len(vals) - 1
    returns = [last]
    sinks = [i for i in range(len(placeholders), last) if i not in vals.used] or list(range(len(placeholders), last))
    if sinks and draw(st.booleans()):
        returns.append(draw(st.sampled_from(sinks)))
    elif not draw(st.integers(0, 9)):  # rarely: a placeholder returned as it is, or one blob returned twice
        returns.append(draw(st.sampled_from([*range(len(placeholders)), last])))
    return Program(tuple(placeholders), tuple(nodes), tuple(vals), tuple(returns))

