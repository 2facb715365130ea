"""``oneflow.core.common``: ``data_type_pb2``."""

from . import data_type_pb2

__all__ = ["data_type_pb2"]
