"""``flow.nn.moments``, ``flow.math.reduce_variance`` and ``reduce_std``, ``flow.nn.batch_normalization`` (the
functional one) and ``flow.layers.layer_norm``, built of existing ops as OneFlow v0.3.4 builds them on the CPU
(``nn_ops.py``, ``reduce_ops.py``, ``layers.py``): their gradients, SBP signatures and kernels are those of the ops
they are made of.

One deliberate difference (docs/deviations.md): OneFlow's CPU ``layer_norm`` multiplies by the Python bool
``scale`` where it means ``gamma`` (``affined *= scale``), so on the CPU its gamma is never applied; its GPU op
applies it. flowlab applies gamma on every device, as the layer_norm op does.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import OpInferError
from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.location import user_location
from ..ir.sbp import BROADCAST
from ._common import require_blob
from .array_ops import reshape, zeros_like
from .initializers import constant_initializer
from .math_ops import add, multiply, reciprocal, sqrt, square, subtract
from .reduce_ops import reduce_mean
from .variable import get_variable


def _fail(message: str) -> OpInferError:
    loc = user_location()
    return OpInferError(f"{loc + ': ' if loc else ''}{message}")


def _axes(axis: int | Sequence[int] | None, rank: int, fn: str) -> list[int]:
    """OneFlow's _check_axis: None is every axis; negative axes count from the end."""
    axes = list(range(rank)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
    for a in axes:
        if not isinstance(a, int) or not -rank <= a < rank:
            raise _fail(f"{fn}: axis {a!r} is out of range for a rank-{rank} blob")
    return [a % rank for a in axes]


def reduce_variance(input_tensor: LazyBlob, axis: int | Sequence[int] | None = None, keepdims: bool = False,
                    name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.math.reduce_variance``: ``mean(x^2) - mean(x)^2`` over ``axis`` (its formula); an empty
    axis list gives zeros like the input."""
    require_blob(input_tensor, "reduce_variance's input")
    axes = _axes(axis, len(input_tensor.shape), "reduce_variance")
    if not axes:
        return zeros_like(input_tensor)
    return subtract(reduce_mean(square(input_tensor), axes, keepdims),
                    square(reduce_mean(input_tensor, axes, keepdims)), name=name)


def reduce_std(input_tensor: LazyBlob, axis: int | Sequence[int] | None = None, keepdims: bool = False,
               name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.math.reduce_std``: sqrt(reduce_variance(x)); an empty axis list gives zeros like x."""
    input_tensor = require_blob(input_tensor, "input_tensor")
    if isinstance(axis, (list, tuple)) and len(axis) == 0:
        return zeros_like(input_tensor)
    return sqrt(reduce_variance(input_tensor, axis, keepdims), name)


def moments(x: LazyBlob, axes: list[int], keepdims: bool = False, name: str | None = None
            ) -> tuple[LazyBlob, LazyBlob]:
    """OneFlow's ``flow.nn.moments``: (mean, variance) over ``axes`` (a list, as OneFlow asserts)."""
    require_blob(x, "moments' input")
    if not isinstance(axes, list):
        raise _fail(f"moments: axes must be a list of ints; got {axes!r}")
    return reduce_mean(x, axes, keepdims), reduce_variance(x, axes, keepdims)


def batch_normalization(x: LazyBlob, mean: LazyBlob, variance: LazyBlob, offset: LazyBlob | None = None,
                        scale: LazyBlob | None = None, variance_epsilon: float = 1e-5, axis: int = 1,
                        name: str | None = None) -> LazyBlob:
    """OneFlow's ``flow.nn.batch_normalization``: ``(x - mean) * rsqrt(variance + variance_epsilon) * scale +
    offset``. ``mean``, ``variance``, ``scale`` and ``offset`` are 1-D of x's ``axis`` length (reshaped to
    broadcast along it) or of x's rank (as ``moments(..., keepdims=True)`` gives them)."""
    require_blob(x, "batch_normalization's x")
    rank = len(x.shape)
    if not isinstance(axis, int) or not -rank <= axis < rank:
        raise _fail(f"batch_normalization: axis {axis!r} is out of range for x {x.blob_desc}")
    axis %= rank
    params = {"mean": mean, "variance": variance, "scale": scale, "offset": offset}
    for what, blob in params.items():
        if blob is not None:
            require_blob(blob, f"batch_normalization's {what}")
    if len(mean.shape) == 1:
        nd = [1] * rank
        nd[axis] = x.shape[axis]
        for what, blob in params.items():
            if blob is not None:
                if tuple(blob.shape) != (x.shape[axis],):
                    raise _fail(f"batch_normalization: {what} must have {x.shape[axis]} elements (axis {axis} of "
                                f"x {x.blob_desc}); got {blob.blob_desc}")
                params[what] = reshape(blob, nd)
    elif len(mean.shape) != rank:
        raise _fail(f"batch_normalization: mean and variance must be 1-D or of x's rank ({x.blob_desc}); got mean "
                    f"{mean.blob_desc}")
    std_inv = reciprocal(sqrt(add(params["variance"], float(variance_epsilon))))  # OneFlow's rsqrt
    out = multiply(subtract(x, params["mean"]), std_inv)
    if params["scale"] is not None:
        out = multiply(out, params["scale"])
    if params["offset"] is not None:
        out = add(out, params["offset"], name=name)
    return out


def layer_norm(inputs: LazyBlob, center: bool = True, scale: bool = True, trainable: bool = True,
               begin_norm_axis: int = 1, begin_params_axis: int = -1, epsilon: float = 1e-5,
               name: str = "LayerNorm") -> LazyBlob:
    """OneFlow's ``flow.layers.layer_norm``: normalize over the axes from ``begin_norm_axis`` on (moments with
    keepdims, then ``nn.batch_normalization``), then ``* gamma + beta``; the variables ``<name>-gamma`` (ones)
    and ``<name>-beta`` (zeros) have the shape ``inputs.shape[begin_params_axis:]`` and are broadcast."""
    require_blob(inputs, "layer_norm's inputs")
    rank = len(inputs.shape)
    for what, a in (("begin_norm_axis", begin_norm_axis), ("begin_params_axis", begin_params_axis)):
        if isinstance(a, bool) or not isinstance(a, int) or not -rank <= a < rank:
            raise _fail(f"layer_norm: {what} {a!r} is out of range for {inputs.blob_desc}")
    if not center and not scale:
        trainable = False
    param_shape = tuple(inputs.shape[begin_params_axis:])
    beta = gamma = None
    with scope.namespace(name):
        if center:
            beta = get_variable("beta", shape=param_shape, dtype=inputs.dtype, initializer=constant_initializer(0.0),
                                trainable=trainable, distribute=BROADCAST)
        if scale:
            gamma = get_variable("gamma", shape=param_shape, dtype=inputs.dtype,
                                 initializer=constant_initializer(1.0), trainable=trainable, distribute=BROADCAST)
    begin_norm_axis %= rank
    mean, variance = moments(inputs, list(range(begin_norm_axis, rank)), keepdims=True)
    out = batch_normalization(inputs, mean, variance, variance_epsilon=epsilon, axis=begin_norm_axis)
    nd = [1] * (rank - len(param_shape)) + list(param_shape)
    if gamma is not None:
        out = multiply(out, reshape(gamma, nd))
    if beta is not None:
        out = add(out, reshape(beta, nd))
    return out


__all__ = ["batch_normalization", "layer_norm", "moments", "reduce_std", "reduce_variance"]
