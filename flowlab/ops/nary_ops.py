"""``flow.math.add_n`` and ``flow.identity_n``: OneFlow's add_n and tuple_identity ops, which take any number of
blobs (``oneflow/user/ops/add_n_op.cpp``, ``tuple_identity_op.cpp``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import OpInferError
from ..frontend.blob import LazyBlob
from ..frontend.builder import add_op
from ..frontend.location import user_location
from ..ir import BlobDesc
from ..ir.sbp import BROADCAST, PARTIAL_SUM, split
from .registry import ANY, ARITHMETIC, InferCtx, OpDef, register_op
from .sbp_rules import SbpCtx, Signature

ADD_N_MAX_INPUTS = 8  # OneFlow's _recursive_build_add_n: one add_n op adds at most 8 blobs


def _infer_add_n(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    ins = ctx.inputs["in"]
    if len(ins) < 2:
        raise ctx.fail(f"add_n needs at least 2 inputs; got {len(ins)}")
    for i, desc in enumerate(ins[1:], 1):
        if desc != ins[0]:
            raise ctx.fail(f"add_n's inputs must all have the shape and dtype of input 0 ({ins[0]}); input {i} is "
                           f"{desc}")
    return {"out": [ins[0]]}


def _add_n_sbp(ctx: SbpCtx) -> list[Signature]:
    """add_n_op.cpp: every input and the output split on the same axis, for each axis; all P -> P."""
    sigs = [ctx.make({"in": split(a), "out": split(a)}) for a in range(ctx.ndim("in"))]
    return [*sigs, ctx.make({"in": PARTIAL_SUM, "out": PARTIAL_SUM})]


def _grad_add_n(ctx: Any) -> None:
    for i in range(len(ctx.op.inputs["in"])):
        ctx.set_dx("in", ctx.dy("out"), i)


def _infer_tuple_identity(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    if not ctx.inputs["in"]:
        raise ctx.fail("identity_n needs at least one input")
    return {"out": list(ctx.inputs["in"])}


def _tuple_identity_sbp(ctx: SbpCtx) -> list[Signature]:
    """tuple_identity_op.cpp's InferSbpSignatureFn: each in_i, and its out_i, as its producer has it (no boxing)."""
    sig: Signature = {}
    for in_bn, out_bn in zip(ctx.bns("in"), ctx.bns("out")):
        sig[in_bn] = sig[out_bn] = ctx.producer_sbp.get(in_bn, BROADCAST)
    return [sig]


def _grad_tuple_identity(ctx: Any) -> None:
    for i in range(len(ctx.op.inputs["in"])):
        dy = ctx.dy("out", i)
        if dy is not None:
            ctx.set_dx("in", dy, i)


register_op(OpDef("add_n", ("in",), ("out",), _infer_add_n, grad=_grad_add_n, dtypes={"in": ARITHMETIC},
                  sbp=_add_n_sbp))
register_op(OpDef("tuple_identity", ("in",), ("out",), _infer_tuple_identity, grad=_grad_tuple_identity,
                  dtypes={"in": ANY}, sbp=_tuple_identity_sbp))


def _blobs(inputs: Any, fn: str) -> list[LazyBlob]:
    if isinstance(inputs, LazyBlob) or not isinstance(inputs, Sequence) or not inputs:
        loc = user_location()
        raise OpInferError(f"{loc + ': ' if loc else ''}{fn} takes a non-empty list of blobs; got {inputs!r}")
    return list(inputs)


def add_n(inputs: Sequence[LazyBlob], name: str | None = None) -> LazyBlob:
    """The elementwise sum of blobs of one shape and dtype. As in OneFlow, one blob is returned as it is, and more
    than 8 are added 8 at a time: the first 8 into one add_n, whose sum joins the rest (recursively)."""
    blobs = _blobs(inputs, "add_n")
    if len(blobs) == 1:
        return blobs[0]
    if len(blobs) <= ADD_N_MAX_INPUTS:
        return add_op("add_n", {"in": blobs}, name=name)[0]
    head = add_n(blobs[:ADD_N_MAX_INPUTS])
    return add_n([*blobs[ADD_N_MAX_INPUTS:], head], name)


def identity_n(inputs: Sequence[LazyBlob], name: str | None = None) -> list[LazyBlob]:
    """One tuple_identity op: a copy of each blob, in order, each lying as its producer lays it. As in OneFlow,
    a ``with_distribute`` hint on an input is not a constraint here: tuple_identity_op.cpp's InferSbpSignatureFn
    reads the signature conf for its outputs only and takes each input as its producer's view has it."""
    blobs = [LazyBlob(b.lbn, b.blob_desc, b.builder) if isinstance(b, LazyBlob) else b
             for b in _blobs(inputs, "identity_n")]
    return add_op("tuple_identity", {"in": blobs}, name=name)


__all__ = ["add_n", "identity_n"]
