"""``flow.math``: elementwise math and reductions."""

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
from .ops.reduce_ops import argmax, reduce_max, reduce_mean, reduce_sum

__all__ = [
    "abs", "add", "argmax", "divide", "exp", "log", "multiply", "negative", "reciprocal", "reduce_max",
    "reduce_mean", "reduce_sum", "relu", "sigmoid", "sign", "sqrt", "square", "subtract", "tanh",
]
