"""System ops: interface ops (input/output/return/variable), foreign I/O, ticks and the main job's ops.

System ops name their outputs ``<op>/out`` as in OneFlow. Their kernels live in the runtime (they touch
buffers, job instances and the reentrant lock), except the ones that only move data.
"""

from __future__ import annotations

from ..ir import BlobDesc
from ..ir.dtype import as_dtype, int32
from .registry import REQUIRED, InferCtx, OpDef, register_op
from .sbp_rules import (
    broadcast_only,
    input_rule,
    model_io_rule,
    output_rule,
    pass_through,
    return_rule,
    variable_rule,
)


def _from_attrs(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    dynamic = ctx.attrs.get("is_dynamic", False)  # a push or pull job's end of a dynamic interface blob
    return {"out": [BlobDesc(tuple(ctx.attrs["shape"]), as_dtype(ctx.attrs["dtype"]), dynamic)]}


def _same_as_in(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [ctx.input("in")]}


def _nothing(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {}


def _section_id(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [BlobDesc((1,), int32)]}


def _case(ctx: InferCtx) -> dict[str, list[BlobDesc]]:
    return {"out": [BlobDesc((1,), int32)] * int(ctx.attrs["num_branches"])}


_SHAPED = {"shape": REQUIRED, "dtype": REQUIRED}
_BOXING = {"lbi": REQUIRED, "view_shape": REQUIRED, "out_slice": REQUIRED, "in_slice": REQUIRED}
SYSTEM_OP_DEFS = (
    # Interface ops: their output memory is what jobs share.
    OpDef("input", (), ("out",), _from_attrs, {**_SHAPED, "batch_axis": 0}, system=True, sbp=input_rule),
    OpDef("output", ("in",), ("out",), _same_as_in, system=True, sbp=output_rule),
    OpDef("return", ("in",), ("out",), _same_as_in, system=True, sbp=return_rule),
    OpDef(
        "variable", (), ("out",), _from_attrs,
        {**_SHAPED, "initializer": REQUIRED, "random_seed": 0, "trainable": True, "regularizer": None},
        system=True, sbp=variable_rule,
    ),
    # Foreign I/O: the boundary between the runtime and Python's numpy arrays.
    OpDef("foreign_input", (), ("out",), _from_attrs, {**_SHAPED, "ofblob_buffer_name": REQUIRED}, system=True,
          sbp=broadcast_only),
    OpDef("foreign_output", ("in",), (), _nothing, {"ofblob_buffer_name": REQUIRED, "mirrored_parts": 0,
                                                      "mirrored_axis": 0}, system=True,
          sbp=broadcast_only),  # the whole blob goes back to Python
    # Ticks (control only: they produce no data).
    OpDef("source_tick", (), (), _nothing, system=True, sbp=broadcast_only),
    OpDef("sink_tick", (), (), _nothing, system=True, sbp=broadcast_only),
    # The main job.
    OpDef("wait_and_send_ids", (), ("out",), _section_id, {"wait_buffer_name": REQUIRED, "id_list": REQUIRED},
          system=True, sbp=broadcast_only),
    OpDef("reentrant_lock", ("start", "end"), ("out",), _section_id, {"lock_id2intersecting_lock_ids": REQUIRED},
          system=True, sbp=broadcast_only),
    OpDef("case", ("in",), ("out",), _case, {"num_branches": REQUIRED}, system=True, sbp=broadcast_only),
    OpDef("tick", ("in",), (), _nothing, {"critical_section_id": REQUIRED}, system=True, sbp=pass_through),
    OpDef("esac", (), ("out",), _section_id, {}, system=True, sbp=broadcast_only),
    OpDef("callback_notify", ("in",), (), _nothing, {"callback_buffer_name": REQUIRED}, system=True,
          sbp=broadcast_only),
    # Model I/O (the System-Model* jobs): they write or read a variable's memory in place ("ref").
    OpDef("model_init", ("ref",), (), _nothing, {"initializer": REQUIRED, "random_seed": 0}, system=True,
          sbp=model_io_rule),
    # model_load initializes a variable the checkpoint lacks, as OneFlow's ModelLoad kernel does.
    OpDef("model_load", ("path", "ref"), (), _nothing,
          {"variable_name": REQUIRED, "initializer": REQUIRED, "random_seed": 0}, system=True, sbp=model_io_rule),
    OpDef("model_save", ("path", "ref"), (), _nothing, {"variable_name": REQUIRED}, system=True, sbp=model_io_rule),
    # Boxing (built by the plan builder, never traced): slice copies and adds between devices' pieces of a blob,
    # zero addends, and the copy of a register to another machine. Their inputs are in_0..in_k; they never appear
    # in a job, so their SBP rule is never asked.
    OpDef("slice_boxing_copy", ("in",), ("out",), _same_as_in, _BOXING, system=True, sbp=broadcast_only),
    OpDef("slice_boxing_add", ("in",), ("out",), _same_as_in, _BOXING, system=True, sbp=broadcast_only),
    OpDef("boxing_zeros", ("in",), ("out",), _same_as_in, _BOXING, system=True, sbp=broadcast_only),
    OpDef("copy_comm_net", ("in",), ("out",), _same_as_in, {"src_machine_id": REQUIRED}, system=True,
          sbp=broadcast_only),
    # A host<->device copy (CopyHd, type "H2D" or "D2H") that the plan builder puts where BuildTaskPath does.
    OpDef("copy_hd", ("in",), ("out",), _same_as_in, {"type": REQUIRED}, system=True, sbp=broadcast_only),
)
for _op_def in SYSTEM_OP_DEFS:
    register_op(_op_def)
