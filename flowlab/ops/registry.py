"""The op registry: for each op type its arguments, attrs, shape/dtype inference (and later its gradient).

Everything about an op is declared in one place, next to its user-facing function (see ``ops/*.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import OpInferError
from ..ir import BlobDesc


@dataclass(frozen=True)
class InferCtx:
    """What an inference rule sees: the op's name, its input blob descs per arg, and its attrs."""

    op_name: str
    op_type: str
    inputs: dict[str, tuple[BlobDesc, ...]]
    attrs: dict[str, Any]

    def input(self, arg: str, index: int = 0) -> BlobDesc:
        return self.inputs[arg][index]

    def fail(self, message: str) -> OpInferError:
        """Build the error an inference rule raises: ``raise ctx.fail("...")``."""
        return OpInferError(message)


InferFn = Callable[[InferCtx], dict[str, list[BlobDesc]]]


@dataclass(frozen=True)
class OpDef:
    op_type: str
    inputs: tuple[str, ...]  # input arg names, in kernel order
    outputs: tuple[str, ...]  # output arg names, in kernel order
    infer: InferFn
    attrs: dict[str, Any] = field(default_factory=dict)  # attr name -> default (REQUIRED if none)
    system: bool = False  # system ops name their outputs "<op>/<arg>", user ops "<op>/<arg>_<i>"
    grad: Callable[..., Any] | None = None  # gradient rule (training issue)


REQUIRED = object()
_OPS: dict[str, OpDef] = {}


def register_op(op_def: OpDef) -> OpDef:
    if op_def.op_type in _OPS:
        raise ValueError(f"op type {op_def.op_type!r} is registered twice")
    _OPS[op_def.op_type] = op_def
    return op_def


def get_op_def(op_type: str) -> OpDef:
    _ensure_loaded()
    try:
        return _OPS[op_type]
    except KeyError:
        raise KeyError(f"no op type {op_type!r} is registered; known: {sorted(_OPS)}") from None


def registered_op_types() -> tuple[str, ...]:
    _ensure_loaded()
    return tuple(sorted(_OPS))


_loaded = False


def _ensure_loaded() -> None:
    """Import every op module once (importing registers its ops)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    from . import OP_MODULES

    for name in OP_MODULES:
        importlib.import_module(f"{__package__}.{name}")
