"""OneFlow v0.3.4's further activations (``oneflow/python/ops/nn_ops.py``, ``math_ops.py``): the elu, hardsigmoid,
hardswish, hardtanh, gelu (the exact erf GELU) and leaky_relu ops (each a user op with its own kernel and gradient op
in OneFlow), and the functions OneFlow builds from other ops: relu6 (hardtanh 0..6), swish (x * sigmoid(beta x)),
mish (x * tanh(softplus x)) and logsoftmax (log(softmax))."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ._common import require_blob
from .math_ops import abs as abs_
from .math_ops import add, exp, log, multiply, negative, relu, sigmoid, tanh
from .nn_ops import softmax
from .registry import FLOATING, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import elementwise


def _same(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"y": [ctx.input("x")]}


def _dx_like(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"dx": [ctx.input("dy")]}


def _grad(ctx: Any) -> None:
    kind = ctx.op.op_type
    if kind == "hardtanh":  # OneFlow's hardtanh_grad reads y: zero where y sits on a bound
        ins = {"y": [ctx.y("y")], "dy": [ctx.dy("y")]}
    else:
        ins = {"x": [ctx.x("x")], "dy": [ctx.dy("y")]}
    ctx.set_dx("x", add_op(f"{kind}_grad", ins, dict(ctx.attrs))[0])


# OneFlow's ops split every arg on the same axis (SplitForEachAxis) and nothing else: none is linear
for _t, _attrs in (("elu", {"alpha": 1.0}), ("hardsigmoid", {}), ("hardswish", {}),
                   ("hardtanh", {"min_val": -1.0, "max_val": 1.0})):
    register_op(OpDef(_t, ("x",), ("y",), _same, dict(_attrs), grad=_grad, dtypes={"x": FLOATING},
                      sbp=elementwise("x")))
    _first = "y" if _t == "hardtanh" else "x"
    register_op(OpDef(f"{_t}_grad", (_first, "dy"), ("dx",), _dx_like, dict(_attrs),
                      dtypes=dtypes_of((_first, "dy"), FLOATING), sbp=elementwise(_first)))


def elu(x: LazyBlob, alpha: float = 1.0, name: str | None = None) -> LazyBlob:
    """x for x > 0, alpha (exp(x) - 1) otherwise."""
    return add_op("elu", {"x": [require_blob(x, "elu's input")]}, {"alpha": float(alpha)}, name)[0]


def hardsigmoid(x: LazyBlob, name: str | None = None) -> LazyBlob:
    """0 for x <= -3, 1 for x >= 3, x / 6 + 1/2 between."""
    return add_op("hardsigmoid", {"x": [require_blob(x, "hardsigmoid's input")]}, name=name)[0]


def hardswish(x: LazyBlob, name: str | None = None) -> LazyBlob:
    """0 for x <= -3, x for x >= 3, x (x + 3) / 6 between."""
    return add_op("hardswish", {"x": [require_blob(x, "hardswish's input")]}, name=name)[0]


def hardtanh(x: LazyBlob, min_val: float = -1.0, max_val: float = 1.0, name: str | None = None) -> LazyBlob:
    """x clamped to [min_val, max_val]."""
    require_blob(x, "hardtanh's input")
    min_val, max_val = float(min_val), float(max_val)
    if not min_val < max_val:
        raise ValueError(f"hardtanh: max_val should be larger than min_val; got min_val={min_val}, "
                         f"max_val={max_val}")
    return add_op("hardtanh", {"x": [x]}, {"min_val": min_val, "max_val": max_val}, name)[0]


def relu6(x: LazyBlob, name: str | None = None) -> LazyBlob:
    """min(max(x, 0), 6): OneFlow's relu6 is hardtanh(x, 0, 6)."""
    return hardtanh(x, 0.0, 6.0, name=name)


def swish(x: LazyBlob, beta: float = 1.0, name: str | None = None) -> LazyBlob:
    """x * sigmoid(beta * x), built from ops as OneFlow builds it."""
    require_blob(x, "swish's input")
    return multiply(x, sigmoid(multiply(x, float(beta)), name=None if name is None else f"{name}_sigmoid"))


def _softplus(x: LazyBlob) -> LazyBlob:
    # log(1 + exp(x)) in the stable form relu(x) + log(1 + exp(-|x|)) (no exp overflow for large x). OneFlow
    # has a softplus op (math.softplus); the composite gives the same values and, except at x == 0 exactly
    # (where d|x| is taken as 0 and d relu as 0, giving 0 for sigmoid(0) = 0.5), the same gradient.
    return add(relu(x), log(add(exp(negative(abs_(x))), 1.0)))


def mish(x: LazyBlob, name: str | None = None) -> LazyBlob:
    """x * tanh(softplus(x)), built from ops as OneFlow builds it."""
    require_blob(x, "mish's input")
    return multiply(x, tanh(_softplus(x)), name=name)


def logsoftmax(logits: LazyBlob, axis: int | None = None, name: str | None = None) -> LazyBlob:
    """log(softmax(logits, axis)), OneFlow's composite (axis None = the last)."""
    require_blob(logits, "logsoftmax's logits")
    return log(softmax(logits, -1 if axis is None else axis), name=name)


def _same(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"y": [ctx.input("x")]}


def _dx_like(arg: str):
    return lambda ctx: {"dx": [ctx.input(arg)]}


def _grad_act(ctx: Any) -> None:
    attrs = {"alpha": ctx.attrs["alpha"]} if ctx.op.op_type == "leaky_relu" else {}
    ctx.set_dx("x", add_op(f"{ctx.op.op_type}_grad", {"x": [ctx.x("x")], "dy": [ctx.dy("y")]}, attrs)[0])


for _op in (
    OpDef("gelu", ("x",), ("y",), _same, grad=_grad_act, sbp=elementwise("x")),
    OpDef("gelu_grad", ("x", "dy"), ("dx",), _dx_like("x"), sbp=elementwise("x")),
    OpDef("leaky_relu", ("x",), ("y",), _same, {"alpha": 0.2}, grad=_grad_act, sbp=elementwise("x")),
    OpDef("leaky_relu_grad", ("x", "dy"), ("dx",), _dx_like("x"), {"alpha": 0.2}, sbp=elementwise("x")),
):
    register_op(dataclasses.replace(_op, dtypes=dtypes_of(_op.inputs, FLOATING)))


def gelu(x: LazyBlob, name: str | None = None) -> LazyBlob:
    """The exact (erf) GELU: x * Phi(x)."""
    return add_op("gelu", {"x": [require_blob(x, "gelu's input")]}, name=name)[0]


def leaky_relu(x: LazyBlob, alpha: float = 0.2, name: str | None = None) -> LazyBlob:
    return add_op("leaky_relu", {"x": [require_blob(x, "leaky_relu's input")]}, {"alpha": float(alpha)}, name)[0]


__all__ = ["elu", "gelu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "logsoftmax", "mish", "relu6",
           "swish"]
