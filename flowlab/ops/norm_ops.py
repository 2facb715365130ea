"""``flow.layers.batch_normalization``: OneFlow's normalization op. In train jobs it normalizes with the batch
statistics and updates the moving statistics in place; in predict jobs (and with ``trainable=False`` or
``training=False``) it uses the moving statistics, as OneFlow's ``layers.batch_normalization`` does."""

from __future__ import annotations

from typing import Any

from ..errors import OpInferError
from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op, current_builder
from ..ir import BlobDesc
from ._common import require_blob
from .initializers import constant_initializer
from .registry import FLOATING, REQUIRED, InferCtx, OpDef, dtypes_of, register_op
from .sbp_rules import normalization_grad_rule, normalization_rule
from .variable import get_variable


def _infer_norm(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    x = ctx.input("x")
    axis = ctx.attrs["axis"]
    if not -len(x.shape) <= axis < len(x.shape):
        raise ctx.fail(f"axis {axis} is out of range for {x}")
    if not 0.0 <= ctx.attrs["momentum"] <= 1.0 or ctx.attrs["epsilon"] < 0:
        raise ctx.fail(f"momentum must be in [0, 1] and epsilon >= 0; got momentum={ctx.attrs['momentum']}, "
                       f"epsilon={ctx.attrs['epsilon']}")
    channels = x.shape[axis]
    for arg in ("moving_mean", "moving_variance", "gamma", "beta"):
        if ctx.input(arg).shape != (channels,):
            raise ctx.fail(f"{arg} must have {channels} elements (axis {axis} of {x}); got {ctx.input(arg)}")
        if ctx.input(arg).dtype != x.dtype:
            raise ctx.fail(f"{arg} must have the dtype of x ({x}); got {ctx.input(arg)}")
    stat = BlobDesc((channels,), x.dtype)
    return {"y": [x], "mean": [stat], "inv_variance": [stat]}


def _grad_norm(ctx: Any) -> None:
    from .array_ops import reshape
    from .math_ops import multiply

    dy, x, gamma = ctx.dy("y"), ctx.x("x"), ctx.x("gamma")
    ins = {"x": [x], "dy": [dy], "mean": [ctx.y("mean")], "inv_variance": [ctx.y("inv_variance")],
           "gamma": [gamma]}
    dx, dgamma, dbeta = add_op("normalization_grad", ins, {"axis": ctx.attrs["axis"]})
    if not ctx.attrs["training"] and ctx.needs_dx("x"):
        # With fixed (moving) statistics y is affine in x: dx = dy * gamma * inv_variance along the axis.
        # normalization_grad's dx assumes batch statistics, so it is not used here.
        axis = ctx.attrs["axis"] % len(x.shape)
        shape = [1] * len(x.shape)
        shape[axis] = x.shape[axis]
        dx = multiply(dy, reshape(multiply(gamma, ctx.y("inv_variance")), shape))
    ctx.set_dx("x", dx)
    ctx.set_dx("gamma", dgamma)
    ctx.set_dx("beta", dbeta)


def _infer_norm_grad(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"dx": [ctx.input("x")], "gamma_diff": [ctx.input("gamma")], "beta_diff": [ctx.input("gamma")]}


register_op(OpDef("normalization", ("x", "moving_mean", "moving_variance", "gamma", "beta"),
                  ("y", "mean", "inv_variance"), _infer_norm,
                  {"axis": REQUIRED, "epsilon": 0.001, "momentum": 0.99, "training": REQUIRED}, grad=_grad_norm,
                  sbp=normalization_rule,
                  dtypes=dtypes_of(("x", "moving_mean", "moving_variance", "gamma", "beta"), FLOATING)))
register_op(OpDef("normalization_grad", ("x", "dy", "mean", "inv_variance", "gamma"),
                  ("dx", "gamma_diff", "beta_diff"), _infer_norm_grad, {"axis": REQUIRED},
                  sbp=normalization_grad_rule,
                  dtypes=dtypes_of(("x", "dy", "mean", "inv_variance", "gamma"), FLOATING)))


def batch_normalization(inputs: LazyBlob, axis: int = -1, momentum: float = 0.99, epsilon: float = 0.001,
                        center: bool = True, scale: bool = True, beta_initializer: dict[str, Any] | None = None,
                        gamma_initializer: dict[str, Any] | None = None,
                        beta_regularizer: dict[str, Any] | None = None,
                        gamma_regularizer: dict[str, Any] | None = None,
                        moving_mean_initializer: dict[str, Any] | None = None,
                        moving_variance_initializer: dict[str, Any] | None = None, trainable: bool = True,
                        training: bool | None = True, name: str = "BatchNorm") -> LazyBlob:
    """OneFlow's ``layers.batch_normalization``.

    Variables ``<name>-beta`` (when ``center``), ``<name>-gamma`` (when ``scale``), ``<name>-moving_mean`` and
    ``<name>-moving_variance``; without ``center``/``scale`` beta/gamma are constants 0/1, as in OneFlow. The op
    is named ``name``. As in OneFlow, ``training`` is forced off outside train jobs and when ``trainable`` is
    False (``None`` means True); with it off the moving statistics normalize and are not updated.
    """
    from .array_ops import constant

    require_blob(inputs, "batch_normalization's inputs")
    rank = len(inputs.shape)
    if not isinstance(axis, int) or not -rank <= axis < rank:
        raise OpInferError(f"batch_normalization: axis {axis!r} is out of range for {inputs.blob_desc}")
    axis %= rank
    channels = inputs.shape[axis]
    if current_builder().job_conf.get("job_type") != "train" or not trainable:
        training = False
    training = True if training is None else bool(training)
    with scope.namespace(name):
        def var(n: str, init: dict[str, Any] | None, default: float, train: bool, reg: Any = None) -> LazyBlob:
            return get_variable(n, shape=(channels,), dtype=inputs.dtype, initializer=init or
                                constant_initializer(default), regularizer=reg, trainable=train)

        beta = (var("beta", beta_initializer, 0.0, trainable, beta_regularizer) if center
                else constant(0.0, inputs.dtype, (channels,), name="beta"))
        gamma = (var("gamma", gamma_initializer, 1.0, trainable, gamma_regularizer) if scale
                 else constant(1.0, inputs.dtype, (channels,), name="gamma"))
        mean = var("moving_mean", moving_mean_initializer, 0.0, False)
        variance = var("moving_variance", moving_variance_initializer, 1.0, False)
    attrs = {"axis": axis, "epsilon": float(epsilon), "momentum": float(momentum), "training": training}
    y, _mean, _inv = add_op("normalization", {"x": [inputs], "moving_mean": [mean], "moving_variance": [variance],
                                              "gamma": [gamma], "beta": [beta]}, attrs, name=name)
    return y
