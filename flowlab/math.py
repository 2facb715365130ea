"""``flow.math``: elementwise math and reductions."""

from .ops.l2norm_ops2 import l2_normalize
from .ops.math_ops import (
    abs,
    add,
    divide,
    exp,
    log,
    multiply,
    negative,
    reciprocal,
    relu,
    sigmoid,
    sign,
    sqrt,
    square,
    subtract,
    tanh,
)
from .ops.more_ops import gelu  # OneFlow exports its (erf) gelu as flow.math.gelu
from .ops.nary_ops import add_n
from .ops.norm_functional import reduce_variance
from .ops.reduce_ops import argmax, reduce_max, reduce_mean, reduce_sum

__all__ = [
    "abs", "add", "add_n", "argmax", "divide", "exp", "gelu", "log", "multiply", "negative", "reciprocal", "reduce_max",
    "reduce_mean", "reduce_sum", "reduce_variance", "relu", "sigmoid", "sign", "sqrt", "square", "subtract", "tanh",
    "l2_normalize",
]
