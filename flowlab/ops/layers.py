"""``flow.layers.dense``: a name scope holding ``weight`` (units, in) and ``bias`` variables, as in OneFlow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..frontend import scope
from ..frontend.blob import LazyBlob
from ._common import require_blob
from .array_ops import reshape
from .initializers import constant_initializer
from .nn_ops import bias_add, matmul
from .variable import get_variable


def dense(inputs: LazyBlob, units: int, activation: Callable[[LazyBlob], LazyBlob] | None = None,
          use_bias: bool = True, kernel_initializer: dict[str, Any] | None = None,
          bias_initializer: dict[str, Any] | None = None, kernel_regularizer: dict[str, Any] | None = None,
          bias_regularizer: dict[str, Any] | None = None, trainable: bool = True, name: str = "Dense",
          model_distribute: Any = None) -> LazyBlob:
    """``activation(inputs @ weight.T + bias)``; inputs of rank > 2 are flattened to (batch, -1) first."""
    require_blob(inputs, "dense's inputs")
    if not isinstance(units, int) or units <= 0:
        raise ValueError(f"dense needs a positive int number of units; got {units!r}")
    x = inputs if len(inputs.shape) == 2 else reshape(inputs, (inputs.shape[0], -1))
    with scope.namespace(name):
        weight = get_variable("weight", shape=(units, x.shape[1]), dtype=x.dtype,
                              initializer=kernel_initializer or constant_initializer(0),
                              regularizer=kernel_regularizer, trainable=trainable)
        out = matmul(x, weight, transpose_b=True, name="matmul")
        return bias_and_activation(out, units, use_bias, bias_initializer, bias_regularizer, trainable, activation)


def bias_and_activation(out: LazyBlob, units: int, use_bias: bool, bias_initializer: dict[str, Any] | None,
                        bias_regularizer: dict[str, Any] | None, trainable: bool,
                        activation: Callable[[LazyBlob], LazyBlob] | None, bias_name: str = "bias") -> LazyBlob:
    """The layers' shared epilogue, inside their name scope: a ``bias`` variable added on axis 1, then the
    activation."""
    if use_bias:
        bias = get_variable(bias_name, shape=(units,), dtype=out.dtype,
                            initializer=bias_initializer or constant_initializer(0),
                            regularizer=bias_regularizer, trainable=trainable)
        out = bias_add(out, bias, name="bias_add")
    return activation(out) if activation is not None else out
