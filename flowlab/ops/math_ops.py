"""Elementwise math: broadcasting binary ops, scalar forms, unary activations, with gradient rules."""

from __future__ import annotations

from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ._common import broadcast_shape, is_number, require_blob, same_dtype
from .registry import ANY, ARITHMETIC, FLOATING, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import broadcast_binary, elementwise, reduce_sum_like_rule

BINARY = ("broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div")
UNARY = ("relu", "sigmoid", "tanh", "negative", "reciprocal", "exp", "log", "sqrt", "square", "sign", "abs")


def _infer_binary(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, y = ctx.input("x"), ctx.input("y")
    same_dtype(ctx, x, y)
    return {"z": [BlobDesc(broadcast_shape(ctx, x.shape, y.shape), x.dtype)]}


def _infer_unary(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"y": [ctx.input("x")]}


def _infer_grad_like_y(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"dx": [ctx.input("dy")]}


def _infer_reduce_sum_like(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    like = ctx.input("like")
    return {"y": [BlobDesc(like.shape, ctx.input("x").dtype)]}


def _unbroadcast(dz: LazyBlob, like: LazyBlob) -> LazyBlob:
    if dz.shape == like.shape:
        return dz
    return add_op("reduce_sum_like", {"x": [dz], "like": [like]})[0]


def _grad_binary(ctx: Any) -> None:
    dz, x, y = ctx.dy("z"), ctx.x("x"), ctx.x("y")
    kind = ctx.op.op_type
    if ctx.needs_dx("x"):
        dx = dz if kind in ("broadcast_add", "broadcast_sub") else (
            multiply(dz, y) if kind == "broadcast_mul" else divide(dz, y))
        ctx.set_dx("x", _unbroadcast(dx, x))
    if ctx.needs_dx("y"):
        if kind == "broadcast_add":
            dy = dz
        elif kind == "broadcast_sub":
            dy = negative(dz)
        elif kind == "broadcast_mul":
            dy = multiply(dz, x)
        else:  # d(x/y)/dy = -z / y
            dy = negative(divide(multiply(dz, ctx.y("z")), y))
        ctx.set_dx("y", _unbroadcast(dy, y))


def _grad_unary(ctx: Any) -> None:
    kind, dy = ctx.op.op_type, ctx.dy("y")
    x, y = ctx.x("x"), ctx.y("y")
    if kind in ("relu", "sigmoid", "tanh"):
        dx = add_op(f"{kind}_grad", {"y": [y], "dy": [dy]})[0]
    elif kind == "negative":
        dx = negative(dy)
    elif kind == "reciprocal":  # d(1/x) = -1/x^2 = -y^2
        dx = negative(multiply(dy, square(y)))
    elif kind == "exp":
        dx = multiply(dy, y)
    elif kind == "log":
        dx = divide(dy, x)
    elif kind == "sqrt":
        dx = multiply(divide(dy, y), 0.5)
    elif kind == "square":
        dx = multiply(multiply(dy, x), 2.0)
    elif kind == "abs":
        dx = multiply(dy, sign(x))
    else:  # sign: zero almost everywhere
        dx = multiply(dy, 0.0)
    ctx.set_dx("x", dx)


def _grad_scalar(ctx: Any) -> None:
    dy = ctx.dy("y")
    ctx.set_dx("x", dy if ctx.op.op_type == "scalar_add" else multiply(dy, ctx.attrs["operand"]))


def _grad_reduce_sum_like(ctx: Any) -> None:
    ctx.set_dx("x", add_op("broadcast_like", {"x": [ctx.dy("y")], "like": [ctx.x("x")]},
                           {"broadcast_axes": None})[0])


# which inputs may be partial sums: add/sub are linear in both, mul in either one, div in its numerator
_PARTIAL = {"broadcast_add": "both", "broadcast_sub": "both", "broadcast_mul": "xy", "broadcast_div": "x"}
EXACT = ("relu", "negative", "square", "sign", "abs")  # exact on integers too; the rest only make sense on floats
for _t in BINARY:
    register_op(OpDef(_t, ("x", "y"), ("z",), _infer_binary, grad=_grad_binary,
                      dtypes=dtypes_of(("x", "y"), ARITHMETIC), sbp=broadcast_binary(_PARTIAL[_t])))
for _t in UNARY:
    register_op(OpDef(_t, ("x",), ("y",), _infer_unary, grad=_grad_unary,
                      dtypes={"x": ARITHMETIC if _t in EXACT else FLOATING},
                      sbp=elementwise("x", partial=_t == "negative")))
for _t in ("relu_grad", "sigmoid_grad", "tanh_grad"):
    register_op(OpDef(_t, ("y", "dy"), ("dx",), _infer_grad_like_y, dtypes=dtypes_of(("y", "dy"), FLOATING),
                      sbp=elementwise("y")))
for _t in ("scalar_add", "scalar_mul"):
    register_op(OpDef(_t, ("x",), ("y",), _infer_unary, {"operand": REQUIRED}, grad=_grad_scalar,
                      dtypes={"x": ARITHMETIC}, sbp=elementwise("x", partial=_t == "scalar_mul")))
register_op(OpDef("reduce_sum_like", ("x", "like"), ("y",), _infer_reduce_sum_like, grad=_grad_reduce_sum_like,
                  sbp=reduce_sum_like_rule,
                  dtypes={"x": ARITHMETIC, "like": ANY}))


# -- user-facing functions -------------------------------------------------------------------------
_NAMES = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide"}


def _binary(kind: str, scalar_kind: str, x: Any, y: Any, name: str | None) -> LazyBlob:
    if isinstance(x, LazyBlob) and isinstance(y, LazyBlob):
        return add_op(f"broadcast_{kind}", {"x": [x], "y": [y]}, name=name)[0]
    if isinstance(x, LazyBlob) and is_number(y):
        return _scalar(scalar_kind, x, y, name)
    if is_number(x) and isinstance(y, LazyBlob):
        return _scalar(scalar_kind, y, x, name)
    raise TypeError(f"flow.math.{_NAMES[kind]} takes blobs or Python numbers; got {type(x).__name__} and "
                    f"{type(y).__name__}")


def _scalar(kind: str, x: LazyBlob, operand: float, name: str | None = None) -> LazyBlob:
    if x.dtype.is_floating:
        value: float | int = float(operand)
    elif float(operand).is_integer():
        value = int(operand)
    else:
        raise TypeError(f"{kind} of the {x.dtype.name} blob {x.blob_desc} by the non-integer {operand!r} would "
                        "truncate the number; cast the blob to a floating dtype first (flow.cast)")
    return add_op(kind, {"x": [x]}, {"operand": value}, name=name)[0]


def _int_constant(value: float, like: LazyBlob) -> LazyBlob:
    from .array_ops import constant

    if not float(value).is_integer():
        raise TypeError(f"dividing the {like.dtype.name} blob {like.blob_desc} and the non-integer {value!r} "
                        "would truncate the number; cast the blob to a floating dtype first (flow.cast)")
    return constant(int(value), like.dtype, (1,))


def add(x: Any, y: Any, name: str | None = None) -> LazyBlob:
    return _binary("add", "scalar_add", x, y, name)


def multiply(x: Any, y: Any, name: str | None = None) -> LazyBlob:
    return _binary("mul", "scalar_mul", x, y, name)


def subtract(x: Any, y: Any, name: str | None = None) -> LazyBlob:
    if isinstance(x, LazyBlob) and is_number(y):
        return _scalar("scalar_add", x, -y, name)
    if is_number(x) and isinstance(y, LazyBlob):
        return _scalar("scalar_add", negative(y), x, name)
    return _binary("sub", "scalar_add", x, y, name)


def divide(x: Any, y: Any, name: str | None = None) -> LazyBlob:
    """``x / y``; integer blobs divide exactly and truncate toward zero (C's ``/``, as OneFlow's kernels)."""
    if isinstance(x, LazyBlob) and is_number(y):
        if y == 0:
            raise ZeroDivisionError(f"flow.math.divide of {x.blob_desc} by the constant 0")
        if not x.dtype.is_floating:
            return add_op("broadcast_div", {"x": [x], "y": [_int_constant(y, x)]}, name=name)[0]
        return _scalar("scalar_mul", x, 1.0 / y, name)
    if is_number(x) and isinstance(y, LazyBlob):
        if not y.dtype.is_floating:
            return add_op("broadcast_div", {"x": [_int_constant(x, y)], "y": [y]}, name=name)[0]
        return _scalar("scalar_mul", reciprocal(y), x, name)
    return _binary("div", "scalar_mul", x, y, name)


def _unary(kind: str):
    def fn(x: LazyBlob, name: str | None = None) -> LazyBlob:
        return add_op(kind, {"x": [require_blob(x, f"the input of {kind}")]}, name=name)[0]

    fn.__name__ = kind
    fn.__doc__ = f"Elementwise {kind}."
    return fn


relu = _unary("relu")
sigmoid = _unary("sigmoid")
tanh = _unary("tanh")
negative = _unary("negative")
reciprocal = _unary("reciprocal")
exp = _unary("exp")
log = _unary("log")
sqrt = _unary("sqrt")
square = _unary("square")
sign = _unary("sign")
abs = _unary("abs")
