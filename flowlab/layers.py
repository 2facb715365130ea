"""``flow.layers``: layers that create their own variables in a name scope."""

from .ops.layers import dense

__all__ = ["dense"]
