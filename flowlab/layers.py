"""``flow.layers``: layers that create their own variables in a name scope."""

from .ops.cnn_ops import conv2d_layer as conv2d
from .ops.layers import dense

__all__ = ["conv2d", "dense"]
