"""``flow.layers.dense``: a name scope holding ``weight`` (units, in) and ``bias`` variables, as in OneFlow."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..frontend import scope
from ..frontend.blob import LazyBlob
from ..frontend.hints import AUTO
from ..frontend.location import user_location
from ..ir.sbp import BROADCAST, SbpParallel, split
from ._common import require_blob
from .array_ops import reshape
from .initializers import constant_initializer
from .nn_ops import bias_add, matmul
from .variable import get_variable


def dense(inputs: LazyBlob, units: int, activation: Callable[..., LazyBlob] | None = None,
          use_bias: bool = True, kernel_initializer: dict[str, Any] | None = None,
          bias_initializer: dict[str, Any] | None = None, kernel_regularizer: dict[str, Any] | None = None,
          bias_regularizer: dict[str, Any] | None = None, trainable: bool = True, name: str = "Dense",
          model_distribute: Any = None) -> LazyBlob:
    """``activation(inputs @ weight.T + bias)`` with ``<name>-weight`` of shape (units, in_features) and
    ``<name>-bias`` of shape (units,), both initialized to 0 unless given an initializer (OneFlow's defaults).

    As in OneFlow, an input of rank > 2 is a batch of vectors along its last axis: it is reshaped to
    ``(-1, in_shape[-1])`` and the result back to ``in_shape[:-1] + (units,)``. (To flatten an image first, use
    ``flow.reshape(x, [x.shape[0], -1])`` or ``flow.flatten(x, start_dim=1)``.)
    """
    require_blob(inputs, "dense's inputs")
    if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
        raise ValueError(f"dense needs a positive int number of units; got {units!r}")
    in_shape = tuple(inputs.shape)
    if len(in_shape) < 2:
        raise ValueError(f"dense needs an input of rank >= 2 (batch, features); got {inputs.blob_desc}")
    distribute = _model_distribute(model_distribute)
    x = inputs if len(in_shape) == 2 else reshape(inputs, (-1, in_shape[-1]))
    with scope.namespace(name):
        weight = get_variable("weight", shape=(units, in_shape[-1]), dtype=x.dtype,
                              initializer=kernel_initializer or constant_initializer(0),
                              regularizer=kernel_regularizer, trainable=trainable, distribute=distribute)
        if distribute is not None:  # OneFlow's layers.dense tags the weight for its consumers too
            weight = weight.with_distribute(distribute)
        out = matmul(x, weight, transpose_b=True, name="matmul")
        out = bias_and_activation(out, units, use_bias, bias_initializer, bias_regularizer, trainable, activation,
                                  distribute=distribute)
    if len(in_shape) > 2:
        out = reshape(out, (*in_shape[:-1], units))
    return out


def _model_distribute(model_distribute: Any) -> SbpParallel | None:
    """OneFlow's dense takes auto, broadcast or split(0) (the weight is (units, in): split(0) cuts the units)."""
    if model_distribute is None or model_distribute is AUTO:
        return None
    if model_distribute == BROADCAST or model_distribute == split(0):
        return model_distribute
    where = user_location()
    raise ValueError(f"{where + ': ' if where else ''}dense's model_distribute must be flow.distribute.auto(), "
                     f"broadcast() or split(0) (split(0) cuts the output units); got {model_distribute!r}")


def apply_activation(out: LazyBlob, activation: Callable[..., LazyBlob] | None) -> LazyBlob:
    """``activation(out, name="activation")`` as OneFlow's layers call it (so the op is ``<scope>-activation``);
    an activation without a ``name`` parameter (a lambda) is called with the blob alone."""
    if activation is None:
        return out
    if not callable(activation):
        raise TypeError(f"activation must be callable, e.g. flow.nn.relu; got {activation!r}")
    try:
        takes_name = "name" in inspect.signature(activation).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        takes_name = False
    return activation(out, name="activation") if takes_name else activation(out)


def bias_and_activation(out: LazyBlob, units: int, use_bias: bool, bias_initializer: dict[str, Any] | None,
                        bias_regularizer: dict[str, Any] | None, trainable: bool,
                        activation: Callable[..., LazyBlob] | None, bias_name: str = "bias",
                        distribute: SbpParallel | None = None) -> LazyBlob:
    """The layers' shared epilogue, inside their name scope: a ``bias`` variable added on axis 1, then the
    activation. ``distribute``: dense's model_distribute, which the bias shares with the weight."""
    if use_bias:
        bias = get_variable(bias_name, shape=(units,), dtype=out.dtype,
                            initializer=bias_initializer or constant_initializer(0),
                            regularizer=bias_regularizer, trainable=trainable, distribute=distribute)
        if distribute is not None:
            bias = bias.with_distribute(distribute)
        out = bias_add(out, bias, name="bias_add")
    return apply_activation(out, activation)
