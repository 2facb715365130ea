"""``flow.layers``: layers that create their own variables in a name scope."""

from .ops.cnn_ops import conv2d_layer as conv2d
from .ops.conv_nd_ops import conv1d_layer as conv1d
from .ops.conv_nd_ops import conv3d_layer as conv3d
from .ops.encode_ops import categorical_ordinal_encoder
from .ops.layers import dense
from .ops.norm_functional import layer_norm
from .ops.norm_layers import batch_normalization_add_relu, batch_normalization_relu, prelu
from .ops.norm_ops import batch_normalization
from .ops.upsample_ops import upsample_2d

__all__ = ["batch_normalization", "conv2d", "dense", "layer_norm", "prelu", "conv1d", "conv3d", "upsample_2d",
           "batch_normalization_add_relu", "batch_normalization_relu", "categorical_ordinal_encoder"]
