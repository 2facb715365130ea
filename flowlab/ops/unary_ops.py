"""OneFlow v0.3.4's unary math ops that flowlab lacked (math_unary_elementwise_op.cpp /
math_unary_elementwise_ops.py): each ``<name>(x) -> y`` with a ``<name>_grad(x, dy) -> dx`` op, as OneFlow
registers them (lgamma has none: OneFlow's backward asserts false). Floating dtypes; SBP S(i) on every axis."""

from __future__ import annotations

from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ._common import require_blob
from .registry import FLOATING, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import elementwise

# in OneFlow's order (math_unary_elementwise_seq.h), less those flowlab already had (abs, exp, log, negative,
# reciprocal, sigmoid, sign, sqrt, square, tanh)
UNARY = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "erf", "erfc", "expm1", "floor",
         "lgamma", "log1p", "log_sigmoid", "reciprocal_no_nan", "rint", "round", "rsqrt", "sin", "sinh", "softplus",
         "tan")
NO_GRAD = ("lgamma",)


def _infer(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"y": [ctx.input("x")]}


def _infer_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, dy = ctx.input("x"), ctx.input("dy")
    if x.shape != dy.shape or x.dtype != dy.dtype:
        raise ctx.fail(f"x {x} and dy {dy} must have one shape and dtype")
    return {"dx": [x]}


def _grad(ctx: Any) -> None:
    ctx.set_dx("x", add_op(f"{ctx.op.op_type}_grad", {"x": [ctx.x("x")], "dy": [ctx.dy("y")]})[0])


for _t in UNARY:
    register_op(OpDef(_t, ("x",), ("y",), _infer, grad=None if _t in NO_GRAD else _grad, dtypes={"x": FLOATING},
                      sbp=elementwise("x")))
    if _t not in NO_GRAD:
        register_op(OpDef(f"{_t}_grad", ("x", "dy"), ("dx",), _infer_grad, dtypes=dtypes_of(("x", "dy"), FLOATING),
                          sbp=elementwise("x")))


def _unary(kind: str):
    def fn(x: LazyBlob, name: str | None = None) -> LazyBlob:
        return add_op(kind, {"x": [require_blob(x, f"the input of flow.math.{kind}")]}, name=name)[0]

    fn.__name__ = kind
    fn.__doc__ = f"Elementwise {kind} (OneFlow's flow.math.{kind})."
    return fn


acos = _unary("acos")
acosh = _unary("acosh")
asin = _unary("asin")
asinh = _unary("asinh")
atan = _unary("atan")
atanh = _unary("atanh")
ceil = _unary("ceil")
cos = _unary("cos")
cosh = _unary("cosh")
erf = _unary("erf")
erfc = _unary("erfc")
expm1 = _unary("expm1")
floor = _unary("floor")
lgamma = _unary("lgamma")
log1p = _unary("log1p")
log_sigmoid = _unary("log_sigmoid")
reciprocal_no_nan = _unary("reciprocal_no_nan")
rint = _unary("rint")
round = _unary("round")
rsqrt = _unary("rsqrt")
sin = _unary("sin")
sinh = _unary("sinh")
softplus = _unary("softplus")
tan = _unary("tan")
