"""Training ops the passes add: variable updates (in place, like OneFlow's *_update ops), the learning-rate
schedule, assign, and global-norm clipping. Their kernels are in kernels/reference/optimizer.py."""

from __future__ import annotations

import dataclasses

from ..ir import BlobDesc
from ..ir.dtype import float32
from ..ir.sbp import BROADCAST, split
from .registry import ANY, FLOATING, INTEGERS, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import SbpCtx, Signature, broadcast_only, elementwise, optimizer_rule


def _no_outputs(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    model, diff = ctx.input("model"), ctx.input("model_diff")
    if model.shape != diff.shape:
        raise ctx.fail(f"model {model} and its gradient {diff} differ in shape")
    return {}


def _indexed_slices(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    model, ids, values = ctx.input("model"), ctx.input("model_diff_indices"), ctx.input("model_diff_values")
    if values.shape != ids.shape + model.shape[1:]:
        raise ctx.fail(f"model_diff_values {values} must be the indices' shape {list(ids.shape)} followed by a row of "
                       f"model {model}")
    return {}


def _indexed_slices_rule(ctx: SbpCtx) -> list[Signature]:
    """indexed_slices_adam_update (model_update_ops.cpp): the model and its state split on axis 0 with indices and
    values B (each device updates the ids in its rows: the kernel's offset comes from ``logical_rows``), or on an
    axis i >= 1 with the values split on the matching axis; scalars B."""
    ind_nd = ctx.ndim("model_diff_indices")
    scalars = {"learning_rate", "train_step", "model_diff_indices"}
    sigs = [ctx.make({arg: BROADCAST if arg in scalars or arg == "model_diff_values" else split(0)
                      for arg in ctx.arg_bns})] if ctx.attrs.get("logical_rows") is not None else []
    return sigs + [ctx.make({arg: BROADCAST if arg in scalars else split(ind_nd + i - 1) if arg == "model_diff_values"
                             else split(i) for arg in ctx.arg_bns}) for i in range(1, ctx.ndim("model"))]


def _lr(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [BlobDesc((1,), float32)]}


def _assign(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    ref, value = ctx.input("ref"), ctx.input("value")
    if ref.shape != value.shape or ref.dtype != value.dtype:
        raise ctx.fail(f"assign needs a value like its ref: ref {ref}, value {value}")
    return {}


def _clip(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": list(ctx.inputs["in"])}


_UPDATE = {"weight_decay": 0.0, "scale": 1.0, "l1": 0.0, "l2": 0.0}  # g = scale * diff + l1 sign(w) + l2 w
for _op in (
    OpDef("sgd_update", ("model", "model_diff", "learning_rate"), (), _no_outputs, dict(_UPDATE), sbp=optimizer_rule,
          mutable_inputs=("model",)),
    OpDef("momentum_update", ("model", "model_diff", "momentum", "learning_rate"), (), _no_outputs,
          {**_UPDATE, "beta": 0.9}, sbp=optimizer_rule, mutable_inputs=("model", "momentum")),
    OpDef("adam_update", ("model", "model_diff", "m", "v", "learning_rate", "train_step"), (), _no_outputs,
          {**_UPDATE, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "do_bias_correction": False}, sbp=optimizer_rule,
          mutable_inputs=("model", "m", "v")),
    # mean_gradient: only with centered=True (OneFlow's optional input), last so the others keep their places
    OpDef("rmsprop_update", ("model", "model_diff", "mean_square", "learning_rate", "mean_gradient"), (), _no_outputs,
          {**_UPDATE, "decay_rate": 0.99, "epsilon": 1e-8, "centered": False}, sbp=optimizer_rule,
          mutable_inputs=("model", "mean_square", "mean_gradient")),
    # IndexedSlicesOptimizerRewritePass's update (compiler/optimizer_ops.py): only the rows the indices name change
    OpDef("indexed_slices_adam_update", ("model", "model_diff_indices", "model_diff_values", "learning_rate", "m", "v",
                                         "train_step"), (), _indexed_slices,
          {"weight_decay": 0.0, "scale": 1.0, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8,
           "do_bias_correction": False, "logical_rows": None},
          dtypes=dtypes_of(("model", "model_diff_indices", "model_diff_values", "learning_rate", "m", "v",
                            "train_step"), FLOATING, model_diff_indices=INTEGERS, train_step=INTEGERS),
          sbp=_indexed_slices_rule, mutable_inputs=("model", "m", "v")),
    # no SetGetSbpFn in model_update_ops.cpp: broadcast only (its trust ratio needs the whole variable's norms)
    OpDef("indexed_slices_sgd_update", ("model", "model_diff_indices", "model_diff_values", "learning_rate"), (),
          _indexed_slices, {"weight_decay": 0.0, "scale": 1.0, "logical_rows": None},
          dtypes=dtypes_of(("model", "model_diff_indices", "model_diff_values", "learning_rate"), FLOATING,
                           model_diff_indices=INTEGERS), sbp=_indexed_slices_rule, mutable_inputs=("model",)),
    OpDef("indexed_slices_momentum_update", ("model", "model_diff_indices", "model_diff_values", "learning_rate",
                                             "momentum"), (), _indexed_slices,
          {"weight_decay": 0.0, "scale": 1.0, "beta": 0.9, "logical_rows": None},
          dtypes=dtypes_of(("model", "model_diff_indices", "model_diff_values", "learning_rate", "momentum"),
                           FLOATING, model_diff_indices=INTEGERS), sbp=_indexed_slices_rule,
          mutable_inputs=("model", "momentum")),
    OpDef("lamb_update", ("model", "model_diff", "m", "v", "beta1_t", "beta2_t", "learning_rate"), (), _no_outputs,
          {**_UPDATE, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-6}, sbp=broadcast_only,
          mutable_inputs=("model", "m", "v", "beta1_t", "beta2_t")),
    # lars_optm.cpp; model_update_ops.cpp lets model, diff and momentum split on any axis, but the kernel's norms
    # would then be each device's piece's: broadcast only here, so the norms are the whole variable's
    OpDef("lars_update", ("model", "model_diff", "learning_rate", "train_step", "momentum"), (), _no_outputs,
          {**_UPDATE, "momentum_beta": 0.9, "epsilon": 1e-9, "lars_coefficient": 1e-4}, sbp=broadcast_only,
          mutable_inputs=("model", "momentum")),
    OpDef("learning_rate_schedule", ("train_step",), ("out",), _lr,
          {"learning_rate": REQUIRED, "decay": None, "warmup": None}, sbp=broadcast_only),
    OpDef("assign", ("ref", "value"), (), _assign, dtypes=dtypes_of(("ref", "value"), ANY), sbp=elementwise("ref"),
          mutable_inputs=("ref",)),
    OpDef("clip_by_global_norm", ("in",), ("out",), _clip, {"clip_norm": REQUIRED}, sbp=broadcast_only),
):
    if not _op.dtypes:  # the updates, the schedule and clipping: floating point, steps are integers
        _op = dataclasses.replace(_op, dtypes=dtypes_of(_op.inputs, FLOATING, train_step=INTEGERS))
    register_op(_op)
