"""The op registry and every op's user-facing function. Importing this package registers all ops."""

from . import optimizer_ops, pad, system, variable  # noqa: F401
from .registry import REQUIRED, InferCtx, OpDef, get_op_def, register_op, registered_op_types

__all__ = ["REQUIRED", "InferCtx", "OpDef", "get_op_def", "register_op", "registered_op_types"]
