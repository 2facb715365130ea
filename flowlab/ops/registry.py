"""The op registry: for each op type its arguments, attrs, shape/dtype inference (and later its gradient).

Everything about an op is declared in one place, next to its user-facing function (see ``ops/*.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import OpInferError
from ..ir import BlobDesc, OpConf
from ..ir.dtype import DType, char, float16, float32, float64, int8, int32, int64, uint8

# The dtype sets an op declares per input (OneFlow's FLOATING_DATA_TYPE_SEQ, INT_DATA_TYPE_SEQ, ...). Every
# kernel runs each dtype its op accepts (float16 computes in float32, see kernels/registry.py); inference
# rejects any other at the user's line, before a kernel could fail or compute in the wrong type.
FLOATING: tuple[DType, ...] = (float16, float32, float64)
INTEGERS: tuple[DType, ...] = (int8, int32, int64, uint8)
ARITHMETIC = FLOATING + INTEGERS
ANY = ARITHMETIC + (char,)  # copies and layout ops move bytes, whatever they mean
INDEX = INTEGERS  # class labels, gather indices, segment ids


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
    # input arg -> the dtypes it accepts (required for every input of a user op)
    dtypes: dict[str, tuple[DType, ...]] = field(default_factory=dict)
    # SBP candidate signatures (OneFlow's GetSbpSignatures): SbpCtx -> [signature], see ops/sbp_rules.py
    sbp: Callable[..., Any] | None = None
    # the inputs an op without outputs writes in place (OneFlow's InputArgModifier ``is_mutable``: an update's
    # model and state, not its gradient, learning rate or step); None: every input
    mutable_inputs: tuple[str, ...] | None = None

    @property
    def sbp_rule(self) -> Callable[..., Any]:
        """The SBP rule, never None: ``register_op`` refuses an op that declares none."""
        if self.sbp is None:
            raise ValueError(f"op type {self.op_type!r} declares no SBP rule")
        return self.sbp


REQUIRED = object()
_OPS: dict[str, OpDef] = {}


def register_op(op_def: OpDef) -> OpDef:
    if op_def.op_type in _OPS:
        raise ValueError(f"op type {op_def.op_type!r} is registered twice")
    if op_def.sbp is None:
        raise ValueError(f"op type {op_def.op_type!r} declares no SBP rule (sbp=...); see flowlab/ops/sbp_rules.py, "
                         "e.g. sbp=broadcast_only for an op that must see whole blobs")
    undeclared = [arg for arg in op_def.inputs if arg not in op_def.dtypes]
    if undeclared and not op_def.system:
        raise ValueError(f"op type {op_def.op_type!r} declares no dtypes for input(s) {undeclared}")
    if op_def.dtypes:
        op_def = dataclasses.replace(op_def, infer=_checking_dtypes(op_def))
    op_def = dataclasses.replace(op_def, infer=_propagating_dynamic(op_def.infer, op_def.op_type in STATIC_OUTPUTS))
    _OPS[op_def.op_type] = op_def
    return op_def


# Ops whose outputs are static whatever their inputs (OneFlow's cast_to_static_shape and the like)
STATIC_OUTPUTS: set[str] = set()
# Ops whose outputs' current shapes depend on their inputs' values (argwhere, sync_dynamic_resize: OneFlow's
# kernels set the header): op type -> the current output shapes from the input arrays (runtime/dynamic.py)
SHAPE_FROM_DATA: dict[str, Callable[[list[Any]], list[tuple[int, ...]]]] = {}


def _propagating_dynamic(infer: InferFn, static: bool) -> InferFn:
    """OneFlow's inference marks an output dynamic when an input is (``is_dynamic``: its shape is an upper bound,
    the current one travels in the blob's header at run time); rules build their outputs' BlobDesc from shapes
    and dtypes, so the flag is carried here, for every op at once. ``static``: the op's outputs never are."""

    def inferred(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
        out = infer(ctx)
        if static or not any(d.is_dynamic for descs in ctx.inputs.values() for d in descs):
            return out
        return {arg: [d if d.is_dynamic else BlobDesc(d.shape, d.dtype, True) for d in descs]
                for arg, descs in out.items()}

    return inferred


def _checking_dtypes(op_def: OpDef) -> InferFn:
    """The dtype check, then the op's inference (which can then take the dtypes for granted): a dtype that no
    kernel of the op computes right is refused at the user's line, before any kernel could run it."""
    infer = op_def.infer

    def checked(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
        for arg, accepted in op_def.dtypes.items():
            for desc in ctx.inputs.get(arg, ()):
                if desc.dtype not in accepted:
                    raise ctx.fail(f"input {arg!r} has dtype {desc.dtype.name}; {op_def.op_type} accepts "
                                   f"{', '.join(d.name for d in accepted)} (convert it with flow.cast)")
        return infer(ctx)

    return checked


def dtypes_of(inputs: tuple[str, ...], accepted: tuple[DType, ...], **per_arg: tuple[DType, ...]) -> dict:
    """``{arg: accepted}`` for every input, with ``per_arg`` exceptions (e.g. ``label=INDEX``)."""
    return {arg: per_arg.get(arg, accepted) for arg in inputs}


def get_op_def(op_type: str) -> OpDef:
    _ensure_loaded()
    try:
        return _OPS[op_type]
    except KeyError:
        raise KeyError(f"no op type {op_type!r} is registered; known: {sorted(_OPS)}") from None


def infer_op(op: OpConf, inputs: dict[str, tuple[BlobDesc, ...]]) -> dict[str, list[BlobDesc]]:
    """``op``'s own shape and dtype inference on ``inputs`` (arg -> descs): what a dynamic blob's kernel reruns on
    each act's current shapes (runtime/dynamic.py, handed this by ``import flowlab``)."""
    return get_op_def(op.op_type).infer(InferCtx(op.name, op.op_type, inputs, dict(op.attrs)))


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
