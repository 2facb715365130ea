"""The parts of OneFlow's generated protobuf modules (``oneflow.core.*_pb2``) that model scripts read: enum
values with OneFlow's numbers. ``import flowlab.core.common.data_type_pb2 as data_type_util`` and
``import flowlab.core.operator.op_conf_pb2 as op_conf_util`` stand for OneFlow's imports of the same paths."""

from . import common, operator

__all__ = ["common", "operator"]
