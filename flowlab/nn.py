"""``flow.nn``: activations, softmax and losses."""

from .ops.assign_ops import compat_conv2d
from .ops.cnn_ops import avg_pool2d, conv2d, dropout, max_pool2d
from .ops.math_ops import relu, sigmoid, tanh
from .ops.more_ops import gelu, leaky_relu, sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits
from .ops.nn_ops import bias_add, softmax, sparse_softmax_cross_entropy_with_logits
from .ops.norm_functional import batch_normalization, moments
from .ops.random_ops import random_mask_like

__all__ = [
    "avg_pool2d", "batch_normalization", "bias_add", "conv2d", "dropout", "gelu", "leaky_relu", "max_pool2d",
    "moments", "relu", "sigmoid",
    "sigmoid_cross_entropy_with_logits", "softmax", "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits", "tanh",
    "random_mask_like", "compat_conv2d",
]
