"""Top-level op functions (``flow.reshape``, ``flow.matmul``, ...): the user-facing half of ``flowlab.ops``."""

from .ops.pad import reflection_pad2d, zero_pad2d

__all__ = ["reflection_pad2d", "zero_pad2d"]
