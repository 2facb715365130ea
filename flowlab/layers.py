"""``flow.layers``: layers that create their own variables in a name scope."""

from .ops.cnn_ops import conv2d_layer as conv2d
from .ops.encode_ops import categorical_ordinal_encoder
from .ops.layers import dense
from .ops.norm_functional import layer_norm
from .ops.norm_ops import batch_normalization

__all__ = ["batch_normalization", "conv2d", "dense", "layer_norm", "categorical_ordinal_encoder"]
