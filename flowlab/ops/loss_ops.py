"""OneFlow v0.3.4's losses (``oneflow/python/ops/nn_ops.py``, ``loss_ops.py``): ``smooth_l1_loss`` and
``sparse_cross_entropy`` are ops with their own kernels and gradient ops in OneFlow (and here); MSELoss, L1Loss,
BCELoss, BCEWithLogitsLoss, MarginRankingLoss, TripletMarginLoss and KLDivLoss are built from math ops, as
OneFlow builds them (see composite_losses.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..ir import BlobDesc
from ..ir.dtype import int8, int32
from ..ir.sbp import BROADCAST, split
from ._common import require_blob, same_dtype
from .model_parallel import _infer_xent
from .registry import FLOATING, INDEX, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import SbpCtx, Signature, elementwise


def _infer_smooth_l1(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    p, label = ctx.input("prediction"), ctx.input("label")
    if p != label:
        raise ctx.fail(f"label {label} must have the shape and dtype of the prediction {p}")
    if ctx.attrs["beta"] < 0:
        raise ctx.fail(f"beta must be >= 0; got {ctx.attrs['beta']}")
    return {"loss": [p]}


def _infer_smooth_l1_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    dy, p, label = ctx.input("loss_grad"), ctx.input("prediction"), ctx.input("label")
    if not dy == p == label:
        raise ctx.fail(f"loss_grad {dy}, prediction {p} and label {label} must have one shape and dtype")
    return {"prediction_grad": [dy]}


def _grad_smooth_l1(ctx: Any) -> None:
    dx = add_op("smooth_l1_loss_grad", {"loss_grad": [ctx.dy("loss")], "prediction": [ctx.x("prediction")],
                                        "label": [ctx.x("label")]}, {"beta": ctx.attrs["beta"]})[0]
    ctx.set_dx("prediction", dx)


def _grad_sparse_ce(ctx: Any) -> None:
    dx = add_op(f"{ctx.op.op_type}_grad", {"prediction": [ctx.x("prediction")], "label": [ctx.x("label")],
                                           "dy": [ctx.dy("out")]}, {"depth": ctx.attrs["depth"]})[0]
    ctx.set_dx("prediction", dx)


def _batch_split(ctx: SbpCtx) -> list[Signature]:
    """sparse_cross_entropy(_grad)'s AddSignature: every arg S(0)."""
    return [ctx.make({arg: split(0) for arg in ctx.arg_bns})]


def _ms_grad_rule(ctx: SbpCtx) -> list[Signature]:
    """AddGradMsSignature: prediction S(last), label and dy B -> prediction_diff S(last)."""
    axis = ctx.ndim("prediction") - 1
    return [ctx.make({"prediction": split(axis), "label": BROADCAST, "dy": BROADCAST,
                      "prediction_diff": split(axis)})]


_GRAD_DTYPES = dtypes_of(("prediction", "label", "dy"), FLOATING, label=INDEX)
for _op in (
    OpDef("smooth_l1_loss", ("prediction", "label"), ("loss",), _infer_smooth_l1, {"beta": 1.0},
          grad=_grad_smooth_l1, dtypes=dtypes_of(("prediction", "label"), FLOATING), sbp=elementwise("prediction")),
    OpDef("smooth_l1_loss_grad", ("loss_grad", "prediction", "label"), ("prediction_grad",), _infer_smooth_l1_grad,
          {"beta": 1.0}, dtypes=dtypes_of(("loss_grad", "prediction", "label"), FLOATING),
          sbp=elementwise("prediction")),
    OpDef("sparse_cross_entropy", ("prediction", "label"), ("out",), lambda ctx: _infer_xent(ctx, ("out",)),
          {"depth": REQUIRED}, grad=_grad_sparse_ce, dtypes={"prediction": FLOATING, "label": INDEX},
          sbp=_batch_split),
    OpDef("sparse_cross_entropy_grad", ("prediction", "label", "dy"), ("prediction_diff",),
          lambda ctx: {"prediction_diff": [ctx.input("prediction")]}, {"depth": REQUIRED}, dtypes=_GRAD_DTYPES,
          sbp=_batch_split),
    OpDef("sparse_cross_entropy_ms_grad", ("prediction", "label", "dy"), ("prediction_diff",),
          lambda ctx: {"prediction_diff": [ctx.input("prediction")]}, {"depth": REQUIRED}, dtypes=_GRAD_DTYPES,
          sbp=_ms_grad_rule),
):
    register_op(_op)


def smooth_l1_loss(prediction: LazyBlob, label: LazyBlob, beta: float = 1.0, name: str | None = None) -> LazyBlob:
    """Elementwise 0.5 d^2 / beta where |d| < beta, |d| - beta / 2 elsewhere (d = prediction - label)."""
    ins = {"prediction": [require_blob(prediction, "smooth_l1_loss's prediction")],
           "label": [require_blob(label, "smooth_l1_loss's label")]}
    return add_op("smooth_l1_loss", ins, {"beta": float(beta)}, name)[0]


def sparse_cross_entropy(labels: LazyBlob, prediction: LazyBlob, name: str | None = None) -> LazyBlob:
    """-log(prediction[label]) per example, for probabilities ``prediction`` (OneFlow clamps them at 1e-20). A
    trailing label axis of 1 is squeezed; a prediction tagged split on its class axis takes the model-parallel
    ``sparse_cross_entropy_ms`` (out P), as OneFlow's function does."""
    from .array_ops import reshape
    from .nn_ops import _mirrored_now

    require_blob(labels, "sparse_cross_entropy's labels")
    require_blob(prediction, "sparse_cross_entropy's prediction")
    if len(labels.shape) == len(prediction.shape):
        if labels.shape[-1] != 1:
            raise ValueError(f"sparse_cross_entropy: labels {labels.blob_desc} of the prediction's rank need a "
                             f"last axis of 1; the prediction is {prediction.blob_desc}")
        labels = reshape(labels, labels.shape[:-1] or (1,))
    elif len(labels.shape) != len(prediction.shape) - 1:
        raise ValueError(f"sparse_cross_entropy: labels {labels.blob_desc} must have the prediction's shape "
                         f"{prediction.blob_desc} without its class axis")
    op = "sparse_cross_entropy"
    if prediction.distribute == split(len(prediction.shape) - 1) and not _mirrored_now():
        op = "sparse_cross_entropy_ms"
    return add_op(op, {"prediction": [prediction], "label": [labels]}, {"depth": prediction.shape[-1]}, name)[0]


def _infer_dense_xent(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    logits, labels = ctx.input("prediction"), ctx.input("label")
    if ctx.op_type.startswith("sigmoid_cross_entropy"):
        # OneFlow v0.3.4's sigmoid_cross_entropy (a label_type in its conf): int8 or int32 labels, or labels of
        # the logits' own floating dtype; the loss has the logits' dtype
        if labels.dtype.is_floating and labels.dtype != logits.dtype:
            raise ctx.fail(f"labels {labels} must be int8, int32 or of the logits' dtype; the logits are {logits} "
                           "(cast the labels with flow.cast)")
    else:
        same_dtype(ctx, logits, labels)
    if logits.shape != labels.shape:
        raise ctx.fail(f"labels {labels} must have the shape of logits {logits}")
    out_shape = logits.shape[:-1] if ctx.op_type == "softmax_cross_entropy" else logits.shape
    outs = {"out": [BlobDesc(out_shape or (1,), logits.dtype)]}
    if ctx.op_type == "softmax_cross_entropy":
        outs["prob"] = [logits]
    return outs


def _grad_softmax_xent(ctx: Any) -> None:
    dx = add_op("softmax_cross_entropy_grad", {"prob": [ctx.y("prob")], "label": [ctx.x("label")],
                                               "dy": [ctx.dy("out")]})[0]
    ctx.set_dx("prediction", dx)


def _grad_sigmoid_xent(ctx: Any) -> None:
    dx = add_op("sigmoid_cross_entropy_grad", {"prediction": [ctx.x("prediction")], "label": [ctx.x("label")],
                                               "dy": [ctx.dy("out")]})[0]
    ctx.set_dx("prediction", dx)


_SIGMOID_LABELS = FLOATING + (int8, int32)  # core/kernel/sigmoid_cross_entropy_kernel.cu's label types
for _op in (
    OpDef("softmax_cross_entropy", ("prediction", "label"), ("prob", "out"), _infer_dense_xent,
          grad=_grad_softmax_xent, sbp=elementwise("prediction", keep_last=False)),
    OpDef("softmax_cross_entropy_grad", ("prob", "label", "dy"), ("dx",), lambda ctx: {"dx": [ctx.input("prob")]},
          sbp=elementwise("prob", keep_last=False)),
    OpDef("sigmoid_cross_entropy", ("prediction", "label"), ("out",), _infer_dense_xent, grad=_grad_sigmoid_xent,
          dtypes=dtypes_of(("prediction", "label"), FLOATING, label=_SIGMOID_LABELS), sbp=elementwise("prediction")),
    OpDef("sigmoid_cross_entropy_grad", ("prediction", "label", "dy"), ("dx",),
          lambda ctx: {"dx": [ctx.input("prediction")]},
          dtypes=dtypes_of(("prediction", "label", "dy"), FLOATING, label=_SIGMOID_LABELS),
          sbp=elementwise("prediction")),
):
    register_op(_op if _op.dtypes else dataclasses.replace(_op, dtypes=dtypes_of(_op.inputs, FLOATING)))


def softmax_cross_entropy_with_logits(labels: LazyBlob, logits: LazyBlob, name: str | None = None) -> LazyBlob:
    """Cross entropy against dense label distributions (rows summing to 1), per example."""
    _prob, out = add_op("softmax_cross_entropy", {"prediction": [require_blob(logits, "logits")],
                                                  "label": [require_blob(labels, "labels")]}, name=name)
    return out


def sigmoid_cross_entropy_with_logits(labels: LazyBlob, logits: LazyBlob, name: str | None = None) -> LazyBlob:
    """Elementwise binary cross entropy of sigmoid(logits) against labels in [0, 1]: float labels of the logits'
    dtype, or int8/int32 labels (as OneFlow v0.3.4); the loss has the logits' dtype."""
    return add_op("sigmoid_cross_entropy", {"prediction": [require_blob(logits, "logits")],
                                            "label": [require_blob(labels, "labels")]}, name=name)[0]


__all__ = ["sigmoid_cross_entropy_with_logits", "smooth_l1_loss", "softmax_cross_entropy_with_logits",
           "sparse_cross_entropy"]
