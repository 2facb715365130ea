"""OneFlow's model-parallel loss: ``sparse_softmax_cross_entropy_ms`` and the ops its pass splits it into.

``flow.nn.sparse_softmax_cross_entropy_with_logits`` traces ``sparse_softmax_cross_entropy_ms`` when the logits
are tagged split on their class (last) axis (OneFlow's nn_ops.py), e.g. ``logits.with_distribute(
flow.distribute.split(1))`` behind a dense with ``model_distribute=split(0)``. Its signature (user_ops/
sparse_softmax_cross_entropy_op.cpp): prediction and prob S(last), label B, out P; its gradient's: prob S(last),
label and dy B, the logits' gradient S(last). The softmax over a split class axis needs every device's maximum
and sum, so after autograd ``SplitSparseSoftmaxCrossEntropyOpPass`` (compiler/split_sparse_xent.py) replaces the
forward op by OneFlow's decomposition: ``reduce_max_device_stage`` (each device's maximum, S(last); the op is
ops/two_stage_ops.py's) ->
``reduce_max_global_stage`` (their maximum, B) -> broadcast_sub -> exp -> reduce_sum (P) -> broadcast_div (the
softmax, S(last)) -> ``sparse_cross_entropy_ms`` (each device's term where the label falls in its slice: P).

The kernels of ``_ms`` ops find their slice of the class axis from the task's parallel_id (OneFlow's
BalancedSplitter(depth, parallel_num).At(parallel_id).begin()); a whole class axis starts at 0.
"""

from __future__ import annotations

from typing import Any

from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.sbp import BROADCAST, PARTIAL_SUM, split
from .registry import FLOATING, INDEX, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import SbpCtx, Signature


class Decomposed(dict):
    """A candidate that is exact only as the pass that rewrites its op computes it (the op's own kernel sees one
    device's classes, not the whole softmax). ``sparse_softmax_cross_entropy_ms``'s split signature is one: the
    exactness test checks its decomposition instead (tests/devices/test_model_parallel_loss.py)."""


def _infer_xent(ctx: InferCtx, outputs: tuple[str, ...]) -> dict[str, list[BlobDesc]]:
    logits, label = ctx.input("prediction"), ctx.input("label")
    if len(logits.shape) < 2 or label.shape != logits.shape[:-1]:
        raise ctx.fail(f"labels {label} must have the shape of the prediction {logits} without its last (class) "
                       "axis, and the prediction needs at least 2 axes")
    if ctx.attrs["depth"] != logits.shape[-1]:
        raise ctx.fail(f"depth {ctx.attrs['depth']} must be the class count {logits.shape[-1]} of {logits}")
    out = BlobDesc(label.shape, logits.dtype)
    return {"prob": [logits], "out": [out]} if "prob" in outputs else {"out": [out]}


def _grad_xent_ms(ctx: Any) -> None:
    dx = add_op("sparse_softmax_cross_entropy_ms_grad",
                {"prob": [ctx.y("prob")], "label": [ctx.x("label")], "dy": [ctx.dy("out")]},
                {"depth": ctx.attrs["depth"]})[0]
    ctx.set_dx("prediction", dx)


def _grad_cross_entropy_ms(ctx: Any) -> None:
    # flow.nn.sparse_cross_entropy of a class-split prediction; ops/loss_ops.py registers the grad op
    dx = add_op("sparse_cross_entropy_ms_grad", {"prediction": [ctx.x("prediction")], "label": [ctx.x("label")],
                                                 "dy": [ctx.dy("out")]}, {"depth": ctx.attrs["depth"]})[0]
    ctx.set_dx("prediction", dx)


def _class_axis(ctx: SbpCtx, arg: str) -> int:
    return ctx.ndim(arg) - 1


def xent_ms_rule(ctx: SbpCtx) -> list[Signature]:
    """prediction and prob S(last), label B, out P (AddMsSignature); exact as the pass decomposes it."""
    axis = _class_axis(ctx, "prediction")
    return [Decomposed(ctx.make({"prediction": split(axis), "prob": split(axis), "label": BROADCAST,
                                 "out": PARTIAL_SUM}))]


def xent_ms_grad_rule(ctx: SbpCtx) -> list[Signature]:
    """prob S(last), label B, dy B -> dx S(last) (AddGradMsSignature)."""
    axis = _class_axis(ctx, "prob")
    return [ctx.make({"prob": split(axis), "label": BROADCAST, "dy": BROADCAST, "dx": split(axis)})]


def cross_entropy_ms_rule(ctx: SbpCtx) -> list[Signature]:
    """sparse_cross_entropy_ms: prediction S(last), label B, out P (sparse_cross_entropy_op.cpp)."""
    return [ctx.make({"prediction": split(_class_axis(ctx, "prediction")), "label": BROADCAST, "out": PARTIAL_SUM})]


for _op in (
    OpDef("sparse_softmax_cross_entropy_ms", ("prediction", "label"), ("prob", "out"),
          lambda ctx: _infer_xent(ctx, ("prob", "out")), {"depth": REQUIRED}, grad=_grad_xent_ms,
          dtypes={"prediction": FLOATING, "label": INDEX}, sbp=xent_ms_rule),
    OpDef("sparse_softmax_cross_entropy_ms_grad", ("prob", "label", "dy"), ("dx",),
          lambda ctx: {"dx": [ctx.input("prob")]}, {"depth": REQUIRED},
          dtypes=dtypes_of(("prob", "label", "dy"), FLOATING, label=INDEX), sbp=xent_ms_grad_rule),
    OpDef("sparse_cross_entropy_ms", ("prediction", "label"), ("out",), lambda ctx: _infer_xent(ctx, ("out",)),
          {"depth": REQUIRED}, grad=_grad_cross_entropy_ms, dtypes={"prediction": FLOATING, "label": INDEX},
          sbp=cross_entropy_ms_rule),
):
    register_op(_op)
