"""Comparisons, maximum/minimum, floor mod, where and broadcast_to_compatible_with (OneFlow v0.3.4's
math_binary_broadcast_ops.cpp, elementwise_maximum_minimum_ops.cpp, where_op.cpp,
broadcast_to_compatible_with_op.cpp and the python functions of math_ops.py / array_ops.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.dtype import int8
from ..ir.sbp import BROADCAST as B
from ..ir.sbp import PARTIAL_SUM, split
from ._common import broadcast_shape, is_number, require_blob, same_dtype
from .registry import ANY, ARITHMETIC, FLOATING, INTEGERS, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import SbpCtx, Signature, broadcast_binary, elementwise

# broadcast_<op>(x, y) -> z in x's dtype, and the logical ones -> int8 (1 where true), as OneFlow's kernels
NORMAL = ("broadcast_maximum", "broadcast_minimum", "broadcast_floor_mod")
LOGICAL = ("broadcast_equal", "broadcast_not_equal", "broadcast_greater", "broadcast_greater_equal",
           "broadcast_less", "broadcast_less_equal", "broadcast_logical_and")
ELEMENTWISE = ("elementwise_maximum", "elementwise_minimum")


def _infer_normal(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, y = ctx.input("x"), ctx.input("y")
    same_dtype(ctx, x, y)
    return {"z": [BlobDesc(broadcast_shape(ctx, x.shape, y.shape), x.dtype)]}


def _infer_logical(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"z": [BlobDesc(_infer_normal(ctx)["z"][0].shape, int8)]}


def _infer_same(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, y = ctx.input("x"), ctx.input("y")
    same_dtype(ctx, x, y)
    if x.shape != y.shape:
        raise ctx.fail(f"x {list(x.shape)} and y {list(y.shape)} must have the same shape (the broadcasting form is "
                       "broadcast_maximum/minimum: flow.math.maximum picks it for different shapes)")
    return {"z": [x]}


def _infer_xmum_backward(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    dz, x, y = ctx.input("dz"), ctx.input("x"), ctx.input("y")
    if not dz.shape == x.shape == y.shape:
        raise ctx.fail(f"dz {list(dz.shape)}, x {list(x.shape)} and y {list(y.shape)} must have one shape")
    return {"dx": [dz], "dy": [dz]}


def _no_grad(ctx: Any) -> None:
    """Integer outputs (comparisons) and floor mod carry no gradient in OneFlow: the inputs get none from here."""


def _grad_xmum(ctx: Any) -> None:
    """elementwise_<max|min>_backward: dz goes to x where x wins strictly, to y otherwise (ties: y), as OneFlow's
    kernel; the broadcasting form broadcasts x and y first and sums the gradients back to their shapes."""
    dz, x, y = ctx.dy("z"), ctx.x("x"), ctx.x("y")
    kind = "maximum" if ctx.op.op_type.endswith("maximum") else "minimum"
    xb = x if x.shape == dz.shape else add_op("broadcast_like", {"x": [x], "like": [dz]}, {"broadcast_axes": None})[0]
    yb = y if y.shape == dz.shape else add_op("broadcast_like", {"x": [y], "like": [dz]}, {"broadcast_axes": None})[0]
    dx, dy = add_op(f"elementwise_{kind}_backward", {"dz": [dz], "x": [xb], "y": [yb]})
    for arg, d, like in (("x", dx, x), ("y", dy, y)):
        if d.shape != like.shape:
            d = add_op("reduce_sum_like", {"x": [d], "like": [like]})[0]
        ctx.set_dx(arg, d)


for _t in NORMAL:
    register_op(OpDef(_t, ("x", "y"), ("z",), _infer_normal, grad=_no_grad if _t.endswith("mod") else _grad_xmum,
                      dtypes=dtypes_of(("x", "y"), ARITHMETIC), sbp=broadcast_binary("none")))
for _t in LOGICAL:
    register_op(OpDef(_t, ("x", "y"), ("z",), _infer_logical, grad=_no_grad,
                      dtypes=dtypes_of(("x", "y"), ARITHMETIC), sbp=broadcast_binary("none")))
for _t in ELEMENTWISE:
    register_op(OpDef(_t, ("x", "y"), ("z",), _infer_same, grad=_grad_xmum,
                      dtypes=dtypes_of(("x", "y"), FLOATING), sbp=elementwise("x")))
    register_op(OpDef(f"{_t}_backward", ("dz", "x", "y"), ("dx", "dy"), _infer_xmum_backward,
                      dtypes=dtypes_of(("dz", "x", "y"), FLOATING), sbp=elementwise("x")))


# -- where and broadcast_to_compatible_with ------------------------------------------------------------------
def _infer_where(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    cond, x, y = ctx.input("condition"), ctx.input("x"), ctx.input("y")
    if not cond.shape == x.shape == y.shape:
        raise ctx.fail(f"condition {list(cond.shape)}, x {list(x.shape)} and y {list(y.shape)} must have one shape "
                       "(flow.where broadcasts them first)")
    same_dtype(ctx, x, y)
    return {"out": [x]}


def _where_sbp(ctx: SbpCtx) -> list[Signature]:
    sigs = [ctx.make({"condition": split(a), "x": split(a), "y": split(a), "out": split(a)})
            for a in range(ctx.ndim("condition"))]
    sigs.append(ctx.make({"condition": B, "x": PARTIAL_SUM, "y": PARTIAL_SUM, "out": PARTIAL_SUM}))
    return sigs


def _grad_where(ctx: Any) -> None:
    from .array_ops import zeros_like

    dout, cond = ctx.dy("out"), ctx.x("condition")
    zero = zeros_like(ctx.x("x"))
    if ctx.needs_dx("x"):
        ctx.set_dx("x", add_op("where", {"condition": [cond], "x": [dout], "y": [zero]})[0])
    if ctx.needs_dx("y"):
        ctx.set_dx("y", add_op("where", {"condition": [cond], "x": [zero], "y": [dout]})[0])


def _infer_compatible(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    shape = x.shape
    for other in ctx.inputs.get("compatible", ()):
        shape = broadcast_shape(ctx, shape, other.shape)
    return {"y": [BlobDesc(shape, x.dtype)]}


def _compatible_sbp(ctx: SbpCtx) -> list[Signature]:
    """Per output axis: each input split there where it has the full axis, B where it broadcasts."""
    out_nd, sigs = ctx.ndim("y"), []
    for a in range(out_nd):
        size, sig = ctx.shape("y")[a], {}
        for arg in ("x", "compatible"):
            for bn in ctx.bns(arg):
                shape = ctx.descs[bn].shape
                offset = out_nd - len(shape)
                sig[bn] = split(a - offset) if a >= offset and shape[a - offset] == size else B
        sig.update({bn: split(a) for bn in ctx.bns("y")})
        if size > 1:
            sigs.append(sig)
    return sigs


def _grad_compatible(ctx: Any) -> None:
    dy, x = ctx.dy("y"), ctx.x("x")
    ctx.set_dx("x", dy if dy.shape == x.shape else add_op("reduce_sum_like", {"x": [dy], "like": [x]})[0])


register_op(OpDef("where", ("condition", "x", "y"), ("out",), _infer_where, grad=_grad_where,
                  dtypes=dtypes_of(("condition", "x", "y"), ARITHMETIC, condition=INTEGERS), sbp=_where_sbp))
register_op(OpDef("broadcast_to_compatible_with", ("x", "compatible"), ("y",), _infer_compatible,
                  grad=_grad_compatible, dtypes={"x": ARITHMETIC, "compatible": ANY}, sbp=_compatible_sbp))


# -- user-facing functions -------------------------------------------------------------------------------------
def _pair(op: str, x: Any, y: Any) -> tuple[LazyBlob, LazyBlob]:
    """Both operands as blobs; a Python number beside a blob becomes a (1,) constant of the blob's dtype (what
    OneFlow's blob operators do for ``blob == 2``)."""
    from .array_ops import constant

    def as_blob(number: float, like: LazyBlob) -> LazyBlob:
        if not like.dtype.is_floating and not float(number).is_integer():
            # OneFlow takes blobs only; a silently truncated 0.5 would compare an int blob with 0
            raise TypeError(f"{op} of the {like.dtype.name} blob {like.blob_desc} and the non-integer {number!r}: "
                            "cast the blob to a floating dtype first (flow.cast)")
        return constant(number, like.dtype, (1,))

    if isinstance(x, LazyBlob) and is_number(y):
        y = as_blob(y, x)
    elif is_number(x) and isinstance(y, LazyBlob):
        x = as_blob(x, y)
    return require_blob(x, f"x of {op}"), require_blob(y, f"y of {op}")


def _broadcast_fn(op_type: str, public: str):
    def fn(x: Any, y: Any, name: str | None = None) -> LazyBlob:
        a, b = _pair(public, x, y)
        return add_op(op_type, {"x": [a], "y": [b]}, name=name)[0]

    fn.__name__ = public
    fn.__doc__ = f"``{op_type}``: elementwise with numpy broadcasting" + (
        "; an int8 blob, 1 where true" if op_type in LOGICAL else "") + " (OneFlow's flow.math." + public + ")."
    return fn


equal = _broadcast_fn("broadcast_equal", "equal")
not_equal = _broadcast_fn("broadcast_not_equal", "not_equal")
greater = _broadcast_fn("broadcast_greater", "greater")
greater_equal = _broadcast_fn("broadcast_greater_equal", "greater_equal")
less = _broadcast_fn("broadcast_less", "less")
less_equal = _broadcast_fn("broadcast_less_equal", "less_equal")
logical_and = _broadcast_fn("broadcast_logical_and", "logical_and")


def floor_mod(x: Any, y: Any, name: str | None = None) -> LazyBlob:
    """``flow.math.mod``: x - floor(x / y) * y, the sign of y (Python's ``%``); integers exactly."""
    if is_number(x) or is_number(y):
        # OneFlow's math.mod raises NotImplementedError for a Python number; say what to do instead
        raise NotImplementedError(f"flow.math.mod takes two blobs; got {type(x).__name__} and {type(y).__name__} "
                                  "(make the number a blob with flow.constant)")
    return add_op("broadcast_floor_mod", {"x": [require_blob(x, "x of mod")], "y": [require_blob(y, "y of mod")]},
                  name=name)[0]


def _xmum(kind: str):
    def fn(x: LazyBlob, y: LazyBlob, name: str | None = None) -> LazyBlob:
        x, y = require_blob(x, f"x of {kind}"), require_blob(y, f"y of {kind}")
        op = f"elementwise_{kind}" if x.shape == y.shape and x.dtype.is_floating else f"broadcast_{kind}"
        return add_op(op, {"x": [x], "y": [y]}, name=name)[0]

    fn.__name__ = kind
    fn.__doc__ = (f"The {kind} of x and y elementwise, with numpy broadcasting (OneFlow's flow.math.{kind}); the "
                  f"gradient goes to x where x is strictly the {kind}, else to y.")
    return fn


maximum = _xmum("maximum")
minimum = _xmum("minimum")


def broadcast_to_compatible_with(x: LazyBlob, compatible: Sequence[LazyBlob], name: str | None = None
                                 ) -> LazyBlob:
    """``x`` broadcast to the shape all of ``x`` and ``compatible`` broadcast to."""
    x = require_blob(x, "x of broadcast_to_compatible_with")
    others = [require_blob(b, "each blob of compatible") for b in compatible]
    return add_op("broadcast_to_compatible_with", {"x": [x], "compatible": others}, name=name)[0]


def where(condition: LazyBlob, x: LazyBlob | None = None, y: LazyBlob | None = None, name: str | None = None
          ) -> LazyBlob:
    """x where ``condition`` (an integer blob) is nonzero, else y; the three broadcast together."""
    condition = require_blob(condition, "condition of flow.where")
    if x is None and y is None:  # OneFlow's argwhere (a dynamic blob: ops/dynamic_ops.py)
        from .dynamic_ops import argwhere

        return argwhere(condition, name=name)
    if x is None or y is None:
        raise ValueError("it is not supported when exactly one of x or y is non-None")
    x, y = require_blob(x, "x of flow.where"), require_blob(y, "y of flow.where")
    if not condition.shape == x.shape == y.shape:
        condition, x, y = (broadcast_to_compatible_with(condition, [x, y]),
                           broadcast_to_compatible_with(x, [condition, y]),
                           broadcast_to_compatible_with(y, [condition, x]))
    return add_op("where", {"condition": [condition], "x": [x], "y": [y]}, name=name)[0]


def constant_like(like: LazyBlob, value: float, dtype: Any = None, name: str | None = None) -> LazyBlob:
    """A blob of ``like``'s shape filled with ``value``, in ``dtype`` (default: like's); an integer dtype
    truncates a float value, as OneFlow's fill casts it."""
    from .array_ops import constant

    like = require_blob(like, "like of constant_like")
    if not is_number(value):
        raise NotImplementedError(f"constant_like's value must be an int or a float; got {value!r}")
    return constant(value, dtype or like.dtype, like.shape, name=name)


def masked_fill(x: LazyBlob, mask: LazyBlob, value: float, name: str | None = None) -> LazyBlob:
    """``x`` with ``value`` where the integer ``mask`` is nonzero (they broadcast); OneFlow builds it as
    ``where(mask, constant_like(x, value), x)``."""
    x = require_blob(x, "x of masked_fill")
    return where(mask, constant_like(x, value), x, name=name)
