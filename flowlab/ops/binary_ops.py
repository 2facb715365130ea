"""OneFlow v0.3.4's elementwise binary math (math_binary_elementwise_ops.cpp: pow, atan2, floordiv, xdivy, xlogy,
each with ``<op>_x_grad`` / ``<op>_y_grad`` ops), scalar_pow (scalar_pow_op.cpp) and clip_by_value
(clip_by_value_op.cpp: clip_by_scalar, _min, _max and their ``_grad`` ops), with the python functions of
math_binary_elementwise_ops.py and math_ops.py (squared_difference is built of subtract and square, as OneFlow)."""

from __future__ import annotations

from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.dtype import int8, int32, int64
from ._common import is_number, require_blob, same_dtype
from .registry import FLOATING, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import elementwise

BINARY = ("pow", "atan2", "floordiv", "xdivy", "xlogy")
CLIPS = ("clip_by_scalar", "clip_by_scalar_min", "clip_by_scalar_max")
# OneFlow registers the clip kernels for ARITHMETIC_DATA_TYPE_SEQ: floating and int8/32/64, no uint8
CLIP_DTYPES = (*FLOATING, int8, int32, int64)
_BOUNDS = {"clip_by_scalar": ("min", "max"), "clip_by_scalar_min": ("min",), "clip_by_scalar_max": ("max",)}


def _infer_same(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, y = ctx.input("x"), ctx.input("y")
    same_dtype(ctx, x, y)
    if x.shape != y.shape:
        raise ctx.fail(f"x {list(x.shape)} and y {list(y.shape)} must have the same shape (OneFlow's elementwise "
                       f"{ctx.op_type} does not broadcast)")
    return {"z": [x]}


def _infer_binary_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    _infer_same(ctx)
    out = "dx" if ctx.op_type.endswith("_x_grad") else "dy"
    return {out: [ctx.input("x") if out == "dx" else ctx.input("y")]}


def _grad_binary(ctx: Any) -> None:
    ins = {"x": [ctx.x("x")], "y": [ctx.x("y")], "dz": [ctx.dy("z")]}
    for arg in ("x", "y"):
        if ctx.needs_dx(arg):
            ctx.set_dx(arg, add_op(f"{ctx.op.op_type}_{arg}_grad", ins)[0])


def _infer_unary(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"y": [ctx.input("x")]}


def _infer_like_x(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, dy = ctx.input("x"), ctx.input("dy")
    if x.shape != dy.shape or x.dtype != dy.dtype:
        raise ctx.fail(f"x {x} and dy {dy} must have one shape and dtype")
    return {"dx": [x]}


def _grad_scalar_pow(ctx: Any) -> None:
    ctx.set_dx("x", add_op("scalar_pow_grad", {"x": [ctx.x("x")], "dy": [ctx.dy("y")]},
                           {"exponent": ctx.attrs["exponent"]})[0])


def _grad_clip(ctx: Any) -> None:
    ctx.set_dx("x", add_op(f"{ctx.op.op_type}_grad", {"dy": [ctx.dy("y")], "x": [ctx.x("x")]}, dict(ctx.attrs))[0])


for _t in BINARY:
    register_op(OpDef(_t, ("x", "y"), ("z",), _infer_same, grad=_grad_binary,
                      dtypes=dtypes_of(("x", "y"), FLOATING), sbp=elementwise("x")))
    for _a in ("x", "y"):
        register_op(OpDef(f"{_t}_{_a}_grad", ("x", "y", "dz"), ("d" + _a,), _infer_binary_grad,
                          dtypes=dtypes_of(("x", "y", "dz"), FLOATING), sbp=elementwise("x")))
register_op(OpDef("scalar_pow", ("x",), ("y",), _infer_unary, {"exponent": REQUIRED}, grad=_grad_scalar_pow,
                  dtypes={"x": FLOATING}, sbp=elementwise("x")))
register_op(OpDef("scalar_pow_grad", ("x", "dy"), ("dx",), _infer_like_x, {"exponent": REQUIRED},
                  dtypes=dtypes_of(("x", "dy"), FLOATING), sbp=elementwise("x")))
for _t in CLIPS:
    _attrs = {f"{kind}_{b}": REQUIRED for b in _BOUNDS[_t] for kind in ("floating", "integral")}
    register_op(OpDef(_t, ("x",), ("y",), _infer_unary, dict(_attrs), grad=_grad_clip, dtypes={"x": CLIP_DTYPES},
                      sbp=elementwise("x")))
    register_op(OpDef(f"{_t}_grad", ("dy", "x"), ("dx",), _infer_like_x, dict(_attrs),
                      dtypes=dtypes_of(("dy", "x"), CLIP_DTYPES), sbp=elementwise("x")))


# -- user-facing functions -------------------------------------------------------------------------------------
def _binary(kind: str):
    def fn(x: LazyBlob, y: LazyBlob, name: str | None = None) -> LazyBlob:
        x, y = require_blob(x, f"x of flow.math.{kind}"), require_blob(y, f"y of flow.math.{kind}")
        return add_op(kind, {"x": [x], "y": [y]}, name=name)[0]

    fn.__name__ = kind
    fn.__doc__ = f"Elementwise {kind} of two blobs of one shape (OneFlow's flow.math.{kind})."
    return fn


atan2 = _binary("atan2")
floordiv = _binary("floordiv")
xdivy = _binary("xdivy")
xlogy = _binary("xlogy")


def pow(x: LazyBlob, y: LazyBlob | float, name: str | None = None) -> LazyBlob:
    """x ** y elementwise; a Python number y builds scalar_pow, as OneFlow's flow.math.pow."""
    x = require_blob(x, "x of flow.math.pow")
    if is_number(y):
        return add_op("scalar_pow", {"x": [x]}, {"exponent": float(y)}, name=name)[0]
    return add_op("pow", {"x": [x], "y": [require_blob(y, "y of flow.math.pow")]}, name=name)[0]


def squared_difference(x: Any, y: Any, name: str | None = None) -> LazyBlob:
    """(x - y)²: OneFlow builds it as square(subtract(x, y))."""
    from .math_ops import square, subtract

    return square(subtract(x, y, None if name is None else name + "_subtract"),
                  None if name is None else name + "_square")


def clip_by_value(values: LazyBlob, min_value: float | None = None, max_value: float | None = None,
                  name: str | None = None) -> LazyBlob:
    """values clipped to [min_value, max_value] (either bound may be None, not both); the gradient passes where
    the value lies inside the bounds (ends included)."""
    values = require_blob(values, "values of flow.clip_by_value")
    attrs: dict[str, Any] = {}
    for bound, value in (("min", min_value), ("max", max_value)):
        if value is not None:
            if not is_number(value):
                raise TypeError(f"clip_by_value's {bound}_value must be a number; got {value!r}")
            attrs[f"floating_{bound}"], attrs[f"integral_{bound}"] = float(value), int(value)
    if min_value is None and max_value is None:
        raise ValueError("min_value and max_value cannot be None at the same time")
    op = "clip_by_scalar" if len(attrs) == 4 else ("clip_by_scalar_min" if min_value is not None else
                                                   "clip_by_scalar_max")
    return add_op(op, {"x": [values]}, attrs, name=name)[0]
