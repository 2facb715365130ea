"""``flow.nn``: activations, softmax and losses."""

from .ops.activation_ops import elu, gelu, hardsigmoid, hardswish, hardtanh, leaky_relu, logsoftmax, mish, relu6, swish
from .ops.cnn_ops import avg_pool2d, conv2d, dropout, max_pool2d
from .ops.composite_losses import (
    BCELoss,
    BCEWithLogitsLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    TripletMarginLoss,
)
from .ops.conv_nd_ops import compat_conv2d, conv1d, conv2d_transpose, conv3d
from .ops.loss_ops import sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits, sparse_cross_entropy
from .ops.math_ops import relu, sigmoid, tanh
from .ops.nn_ops import bias_add, softmax, sparse_softmax_cross_entropy_with_logits
from .ops.norm_functional import batch_normalization, moments
from .ops.norm_layers import (
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    PixelShuffle,
    PixelShufflev2,
    layer_norm,
)
from .ops.pool3d_ops import avg_pool3d, max_pool3d
from .ops.random_mask_ops import random_mask_like

__all__ = [
    "avg_pool2d", "batch_normalization", "bias_add", "conv2d", "dropout", "gelu", "leaky_relu", "max_pool2d",
    "moments", "relu", "sigmoid",
    "sigmoid_cross_entropy_with_logits", "softmax", "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits", "tanh",
    "elu", "hardsigmoid", "hardswish", "hardtanh", "logsoftmax", "mish", "relu6", "swish",
    "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss", "TripletMarginLoss",
    "sparse_cross_entropy",
    "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "PixelShuffle", "PixelShufflev2", "layer_norm",
    "compat_conv2d", "conv1d", "conv2d_transpose", "conv3d",
    "avg_pool3d", "max_pool3d", "random_mask_like",
]
