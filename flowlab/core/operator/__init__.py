"""``oneflow.core.operator``: ``op_conf_pb2``."""

from . import op_conf_pb2

__all__ = ["op_conf_pb2"]
