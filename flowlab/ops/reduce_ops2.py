"""OneFlow v0.3.4's other reductions (reduce_ops.cpp: reduce_min, reduce_prod, reduce_all, reduce_any; the
python functions of reduce_ops.py, which build reduce_euclidean_norm, reduce_logsumexp and reduce_std from other
ops), count_not_finite, and polyval as OneFlow's python builds it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.dtype import int64
from ..ir.sbp import PARTIAL_SUM, split
from ._common import require_blob
from .reduce_ops import _infer_reduce, _reduce
from .registry import ARITHMETIC, FLOATING, InferCtx, OpDef, register_op
from .sbp_rules import SbpCtx, Signature, reduce_rule

NEW = ("reduce_min", "reduce_prod", "reduce_all", "reduce_any")


def _grad_reduce_min(ctx: Any) -> None:
    """OneFlow's GenerateBackwardOpConf4ReduceMaxMin: dy shared by the elements equal to the result, which the
    reduce_max_grad op computes for a minimum as well (its mask is x == y)."""
    x, dy = ctx.x("input_tensor"), ctx.dy("output_tensor")
    ctx.set_dx("input_tensor", add_op("reduce_max_grad", {"x": [x], "y": [ctx.y("output_tensor")], "dy": [dy]},
                                      {"axis": ctx.attrs["axis"], "keepdims": ctx.attrs["keepdims"]})[0])


for _t in NEW:
    register_op(OpDef(_t, ("input_tensor",), ("output_tensor",), _infer_reduce, {"axis": None, "keepdims": False},
                      grad=_grad_reduce_min if _t == "reduce_min" else None, sbp=reduce_rule(sum_like=False),
                      dtypes={"input_tensor": ARITHMETIC}))


Axis = int | Sequence[int] | None


def _empty(axis: Axis) -> bool:
    return isinstance(axis, (list, tuple)) and len(axis) == 0


def reduce_min(x: LazyBlob, axis: Axis = None, keepdims: bool = False, name: str | None = None) -> LazyBlob:
    """The minimum over ``axis`` (all axes when None; an empty list gives x, as OneFlow)."""
    return x if _empty(axis) else _reduce("reduce_min", x, axis, keepdims, name)


def reduce_prod(x: LazyBlob, axis: Axis = None, keepdims: bool = False, name: str | None = None) -> LazyBlob:
    """The product over ``axis`` (no gradient: OneFlow registers none)."""
    return x if _empty(axis) else _reduce("reduce_prod", x, axis, keepdims, name)


def _logical(kind: str, x: LazyBlob, axis: Axis, keepdims: bool, name: str | None) -> LazyBlob:
    from .compare_ops import not_equal

    if _empty(axis):  # OneFlow: x != 0
        return not_equal(x, 0)
    return _reduce(kind, x, axis, keepdims, name)


def reduce_all(x: LazyBlob, axis: Axis = None, keepdims: bool = False, name: str | None = None) -> LazyBlob:
    """1 where every element over ``axis`` is nonzero, else 0, in x's dtype."""
    return _logical("reduce_all", x, axis, keepdims, name)


def reduce_any(x: LazyBlob, axis: Axis = None, keepdims: bool = False, name: str | None = None) -> LazyBlob:
    """1 where some element over ``axis`` is nonzero, else 0, in x's dtype."""
    return _logical("reduce_any", x, axis, keepdims, name)


def reduce_euclidean_norm(input_tensor: LazyBlob, axis: Axis = None, keepdims: bool = False,
                          name: str | None = None) -> LazyBlob:
    """sqrt(reduce_sum(square(x))), as OneFlow builds it."""
    from .math_ops import sqrt, square
    from .reduce_ops import reduce_sum

    return sqrt(reduce_sum(square(require_blob(input_tensor, "input_tensor")), axis, keepdims), name)


def reduce_logsumexp(input_tensor: LazyBlob, axis: Axis = None, keepdims: bool = False,
                     name: str | None = None) -> LazyBlob:
    """log(reduce_sum(exp(x))): OneFlow's formula as written (no max shift: large inputs overflow there too)."""
    from .math_ops import exp, log
    from .reduce_ops import reduce_sum

    return log(reduce_sum(exp(require_blob(input_tensor, "input_tensor")), axis, keepdims), name)


def reduce_std(input_tensor: LazyBlob, axis: Axis = None, keepdims: bool = False, name: str | None = None
               ) -> LazyBlob:
    """sqrt(reduce_variance(x)); an empty axis list gives zeros like x, as OneFlow."""
    from .array_ops import zeros_like
    from .math_ops import sqrt
    from .norm_functional import reduce_variance

    input_tensor = require_blob(input_tensor, "input_tensor")
    if _empty(axis):
        return zeros_like(input_tensor)
    return sqrt(reduce_variance(input_tensor, axis, keepdims), name)


# -- count_not_finite, polyval --------------------------------------------------------------------------------
def _infer_count(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    xs = ctx.inputs["x"]
    if len({d.dtype for d in xs}) > 1:
        raise ctx.fail(f"every x must have one dtype; got {', '.join(str(d) for d in xs)}")
    return {"y": [BlobDesc((1,), int64)]}


def _count_sbp(ctx: SbpCtx) -> list[Signature]:
    """count_not_finite_op.cpp: the inputs split on one axis (each axis all of them have) -> y P."""
    axes = min(len(ctx.descs[bn].shape) for bn in ctx.bns("x"))
    return [ctx.make({"x": split(a), "y": PARTIAL_SUM}) for a in range(axes)]


for _t in ("count_not_finite", "multi_count_not_finite"):
    register_op(OpDef(_t, ("x",), ("y",), _infer_count, dtypes={"x": FLOATING}, sbp=_count_sbp))


def count_not_finite(x: LazyBlob, name: str | None = None) -> LazyBlob:
    """How many elements of x are NaN or ±inf: an int64 blob of shape (1,)."""
    return add_op("count_not_finite", {"x": [require_blob(x, "x of count_not_finite")]}, name=name)[0]


def multi_count_not_finite(x: Sequence[LazyBlob] | None = None, name: str | None = None) -> LazyBlob:
    """count_not_finite summed over the blobs of ``x`` (at least one, one dtype)."""
    blobs = [require_blob(b, "each x of multi_count_not_finite") for b in (x or ())]
    if not blobs:
        raise ValueError("multi_count_not_finite needs at least one blob")
    return add_op("multi_count_not_finite", {"x": blobs}, name=name)[0]


def polyval(coeffs: list | tuple, x: LazyBlob, name: str | None = None) -> LazyBlob:
    """coeffs[0]·x^(n-1) + ... + coeffs[-1] by Horner's rule, built as OneFlow builds it (zeros_like, then
    add(c, multiply(p, x)) per coefficient)."""
    from .array_ops import zeros_like
    from .math_ops import add, multiply

    if not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"Argument coeffs must be list type found {type(coeffs)}")
    p = zeros_like(require_blob(x, "x of polyval"), name=name)
    for c in coeffs:
        p = add(c, multiply(p, x))
    return p
