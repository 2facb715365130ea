"""``flow.nn``: activations, softmax and losses."""

from .ops.math_ops import relu, sigmoid, tanh
from .ops.nn_ops import bias_add, softmax, sparse_softmax_cross_entropy_with_logits

__all__ = ["bias_add", "relu", "sigmoid", "softmax", "sparse_softmax_cross_entropy_with_logits", "tanh"]
