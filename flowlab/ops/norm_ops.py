"""``flow.layers.batch_normalization``: OneFlow's normalization op. In train jobs it normalizes with the batch
statistics and updates the moving statistics in place; in predict jobs it uses the moving statistics."""

from __future__ import annotations

from typing import Any

from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op, current_builder
from ..ir import BlobDesc
from ._common import require_blob
from .initializers import constant_initializer
from .registry import REQUIRED, InferCtx, OpDef, register_op
from .variable import get_variable


def _infer_norm(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    axis = ctx.attrs["axis"]
    if not -len(x.shape) <= axis < len(x.shape):
        raise ctx.fail(f"axis {axis} is out of range for {x}")
    channels = x.shape[axis]
    for arg in ("moving_mean", "moving_variance", "gamma", "beta"):
        if ctx.input(arg).shape != (channels,):
            raise ctx.fail(f"{arg} must have {channels} elements (axis {axis} of {x}); got {ctx.input(arg)}")
    stat = BlobDesc((channels,), x.dtype)
    return {"y": [x], "mean": [stat], "inv_variance": [stat]}


def _grad_norm(ctx: Any) -> None:
    ins = {"x": [ctx.x("x")], "dy": [ctx.dy("y")], "mean": [ctx.y("mean")], "inv_variance": [ctx.y("inv_variance")],
           "gamma": [ctx.x("gamma")]}
    dx, dgamma, dbeta = add_op("normalization_grad", ins, {"axis": ctx.attrs["axis"]})
    ctx.set_dx("x", dx)
    ctx.set_dx("gamma", dgamma)
    ctx.set_dx("beta", dbeta)


def _infer_norm_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"dx": [ctx.input("x")], "gamma_diff": [ctx.input("gamma")], "beta_diff": [ctx.input("gamma")]}


register_op(OpDef("normalization", ("x", "moving_mean", "moving_variance", "gamma", "beta"),
                  ("y", "mean", "inv_variance"), _infer_norm,
                  {"axis": REQUIRED, "epsilon": 0.001, "momentum": 0.99, "training": REQUIRED}, grad=_grad_norm))
register_op(OpDef("normalization_grad", ("x", "dy", "mean", "inv_variance", "gamma"),
                  ("dx", "gamma_diff", "beta_diff"), _infer_norm_grad, {"axis": REQUIRED}))


def batch_normalization(inputs: LazyBlob, axis: int = -1, momentum: float = 0.99, epsilon: float = 0.001,
                        center: bool = True, scale: bool = True, beta_initializer: dict[str, Any] | None = None,
                        gamma_initializer: dict[str, Any] | None = None,
                        beta_regularizer: dict[str, Any] | None = None,
                        gamma_regularizer: dict[str, Any] | None = None,
                        moving_mean_initializer: dict[str, Any] | None = None,
                        moving_variance_initializer: dict[str, Any] | None = None, trainable: bool = True,
                        training: bool | None = None, name: str = "BatchNorm") -> LazyBlob:
    """Variables ``<name>-gamma``, ``-beta``, ``-moving_mean``, ``-moving_variance`` (OneFlow's names).
    ``training`` defaults to whether the job is a train job."""
    require_blob(inputs, "batch_normalization's inputs")
    channels = inputs.shape[axis]
    if training is None:
        training = current_builder().job_conf.get("job_type") == "train"
    with scope.namespace(name):
        def var(n: str, init: dict[str, Any] | None, default: float, train: bool, reg: Any = None) -> LazyBlob:
            return get_variable(n, shape=(channels,), dtype=inputs.dtype, initializer=init or
                                constant_initializer(default), regularizer=reg, trainable=train and trainable)

        gamma = var("gamma", gamma_initializer, 1.0, scale, gamma_regularizer)
        beta = var("beta", beta_initializer, 0.0, center, beta_regularizer)
        mean = var("moving_mean", moving_mean_initializer, 0.0, False)
        variance = var("moving_variance", moving_variance_initializer, 1.0, False)
        attrs = {"axis": axis, "epsilon": float(epsilon), "momentum": float(momentum), "training": bool(training)}
        y, _mean, _inv = add_op("normalization", {"x": [inputs], "moving_mean": [mean], "moving_variance": [variance],
                                                  "gamma": [gamma], "beta": [beta]}, attrs, name="normalization")
    return y
