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
from .ops.more_ops import gelu  # OneFlow exports its (erf) gelu as flow.math.gelu
from .ops.nary_ops import add_n
from .ops.norm_functional import reduce_variance
from .ops.reduce_ops import argmax, reduce_max, reduce_mean, reduce_sum
from .ops.segment_ops import unsorted_batch_segment_sum, unsorted_segment_sum, unsorted_segment_sum_like
from .ops.sort_ops import in_top_k, top_k

__all__ = [
    "abs", "add", "add_n", "argmax", "divide", "exp", "gelu", "log", "multiply", "negative", "reciprocal", "reduce_max",
    "reduce_mean", "reduce_sum", "reduce_variance", "relu", "sigmoid", "sign", "sqrt", "square", "subtract", "tanh",
    "in_top_k", "top_k", "unsorted_batch_segment_sum", "unsorted_segment_sum", "unsorted_segment_sum_like",
]
