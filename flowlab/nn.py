"""``flow.nn``: activations, softmax and losses."""

from .ops.math_ops import relu, sigmoid, tanh
from .ops.more_ops import gelu, leaky_relu, sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits
from .ops.nn_ops import bias_add, softmax, sparse_softmax_cross_entropy_with_logits

__all__ = [
    "bias_add", "gelu", "leaky_relu", "relu", "sigmoid", "sigmoid_cross_entropy_with_logits", "softmax",
    "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits", "tanh",
]
