"""OneFlow v0.3.4's ``prelu`` op (``user/ops/prelu_op.cpp``, ``user/kernels/prelu_kernel.cpp``), which
``flow.layers.prelu`` (ops/norm_layers.py) builds: y = x for x > 0, alpha * x otherwise, alpha of x's shape without
its first axis (1 on shared axes, broadcast). Its gradient op ``prelu_grad`` gives dx and alpha_diff (the
x <= 0 terms dy * x summed over the axes alpha is broadcast on), with OneFlow's SBP signatures."""

from __future__ import annotations

from typing import Any

from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.sbp import BROADCAST, PARTIAL_SUM, split
from .registry import FLOATING, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import SbpCtx, Signature


def _check_alpha(ctx: InferCtx, x: BlobDesc, alpha: BlobDesc) -> None:
    if len(x.shape) != len(alpha.shape) + 1 or any(a not in (d, 1) for a, d in zip(alpha.shape, x.shape[1:])):
        raise ctx.fail(f"alpha {alpha} must have the shape of x {x} without its first axis, 1 where shared")
    if alpha.dtype != x.dtype:
        raise ctx.fail(f"alpha {alpha} must have the dtype of x {x}")


def _infer(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x, alpha = ctx.input("x"), ctx.input("alpha")
    _check_alpha(ctx, x, alpha)
    return {"y": [x]}


def _infer_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    dy, x, alpha = ctx.input("dy"), ctx.input("x"), ctx.input("alpha")
    _check_alpha(ctx, x, alpha)
    if dy != x:
        raise ctx.fail(f"dy {dy} must have the shape and dtype of x {x}")
    return {"dx": [x], "alpha_diff": [alpha]}


def _grad(ctx: Any) -> None:
    dx, alpha_diff = add_op("prelu_grad", {"dy": [ctx.dy("y")], "x": [ctx.x("x")], "alpha": [ctx.x("alpha")]})
    if ctx.needs_dx("x"):
        ctx.set_dx("x", dx)
    if ctx.needs_dx("alpha"):
        ctx.set_dx("alpha", alpha_diff)


def _split_axes(ctx: SbpCtx) -> list[int]:
    x, alpha = ctx.shape("x"), ctx.shape("alpha")
    return [i for i in range(1, len(x)) if x[i] == alpha[i - 1]]


def _rule(ctx: SbpCtx) -> list[Signature]:
    sigs = [ctx.make({"x": split(0), "alpha": BROADCAST, "y": split(0)})]
    return sigs + [ctx.make({"x": split(i), "alpha": split(i - 1), "y": split(i)}) for i in _split_axes(ctx)]


def _grad_rule(ctx: SbpCtx) -> list[Signature]:
    sigs = [ctx.make({"dy": split(0), "x": split(0), "alpha": BROADCAST, "dx": split(0), "alpha_diff": PARTIAL_SUM}),
            ctx.make({"dy": PARTIAL_SUM, "x": BROADCAST, "alpha": BROADCAST, "dx": PARTIAL_SUM,
                      "alpha_diff": PARTIAL_SUM})]
    return sigs + [ctx.make({"dy": split(i), "x": split(i), "alpha": split(i - 1), "dx": split(i),
                             "alpha_diff": split(i - 1)}) for i in _split_axes(ctx)]


register_op(OpDef("prelu", ("x", "alpha"), ("y",), _infer, grad=_grad, dtypes=dtypes_of(("x", "alpha"), FLOATING),
                  sbp=_rule))
register_op(OpDef("prelu_grad", ("dy", "x", "alpha"), ("dx", "alpha_diff"), _infer_grad,
                  dtypes=dtypes_of(("dy", "x", "alpha"), FLOATING), sbp=_grad_rule))
