"""A device's own rows of an all-gathered variable are the variable's memory (a *piece* grant).

Under ``distributed_split`` (optimizer_placement.py) each device holds its rows of a weight (S(0)) and its
consumers read the whole weight (B): a ``slice_boxing_copy`` task per device gathers every device's rows into a
register of its own, the device's own rows included, although that device's variable register already holds
exactly those bytes. Here that register asks to be laid out around the variable's register so that the variable
is the piece of it holding its rows (``piece_inplace_consumed_regst_desc_id`` and ``piece_inplace_offset`` on the
gathered register, named as OneFlow's ``inplace_consumed_regst_desc_id``; OneFlow has no piece grant: its
all-gather copies every piece), and the copy kernel moves only the other devices' rows
(runtime/boxing_kernels.py). The variable's update, which writes its rows in place, then writes the gathered
register's own rows too.

Only where that is exact: the input is the register of a ``variable`` task on the same CPU device (a GPU variable
reaches the CPU boxing through a CopyD2H task inserted later: not its memory), holding one blob,
one register (as the gathered one then has: it cannot rotate over one variable), the same dtype, and its box is a
run of whole rows of the gathered box (axis 0; every other axis whole), so its bytes are one contiguous run there.

Sharing is safe only if every reader of the gathered register reads before the variable's writers of that job
(the update) write the rows: the copying Plan's readers saw the value before the update. As for a variable's ref
(inplace.py), each reader must reach each writer in the task graph; where one does not, the writer gets a control
edge from it; where a writer reaches a reader, or a reader writes its input, the copy stays. Across steps the
gathered register's one register orders the rest: the next step's gather waits for every reader to release it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import CompileError
from ..ir import Plan, RegstDesc
from .inplace import order_readers_before_writers, task_successors, writes_variable

if TYPE_CHECKING:
    from .plan_builder import BuilderRegst, BuilderTask, PlanBuilder


def set_all_gather_inplace(pb: PlanBuilder) -> None:
    """Grant each all-gather of a variable (a SliceBoxing copy reading a variable register of its own device) the
    variable's memory as its own rows, and order every reader of the gathered register before the variable's
    writers in the job."""
    task_of = {t.task_id: t for t in pb.tasks}
    successors: dict[int, set[int]] | None = None
    granted: set[int] = set()  # variable registers already a piece of a gathered one
    for task in pb.tasks:
        if task.task_type != "SliceBoxing" or task.op.op_type != "slice_boxing_copy":
            continue
        out = task.produced["out"]
        found = _own_piece(pb, task, task_of)
        if found is None or found[0].regst_desc_id in granted:
            continue
        var_regst, offset = found
        readers = [task_of[c] for c in out.consumers]
        if any(writes_variable(r.op.op_type, bool(r.op.output_lbns)) or r.job_id != task.job_id for r in readers):
            continue
        if successors is None:
            successors = task_successors(pb)
        writers = [task_of[c] for c in var_regst.consumers if task_of[c].job_id == task.job_id
                   and writes_variable(task_of[c].op.op_type, bool(task_of[c].op.output_lbns))]
        if not order_readers_before_writers(pb, successors, readers, writers):
            continue  # a reader after the update must see the rows the gather took: keep the copy
        out.register_num = 1
        out.piece_inplace = (var_regst.regst_desc_id, offset)
        granted.add(var_regst.regst_desc_id)


def _own_piece(pb: PlanBuilder, task: BuilderTask, task_of: dict[int, BuilderTask]) -> tuple[BuilderRegst, int] | None:
    """The variable register of ``task``'s device among its inputs and the byte offset of its rows in the output,
    where it is one contiguous run of the output's bytes; else None."""
    out = task.produced["out"]
    if len(out.blobs) != 1:
        return None
    (out_desc,) = out.blobs.values()
    out_box = tuple(map(tuple, task.op.attrs["out_slice"]))
    for i, in_box in enumerate(task.op.attrs["in_slice"]):
        box = tuple(map(tuple, in_box))
        ids = task.consumed.get(f"in_{i}", [])
        if len(ids) != 1:
            continue
        regst = pb.regsts[ids[0]]
        producer = task_of[regst.producer]
        if (producer.op.op_type != "variable" or (producer.machine_id, producer.device_id) != (
                task.machine_id, task.device_id) or producer.op.parallel_conf.device_tag != "cpu"
                or regst.register_num != 1 or len(regst.blobs) != 1
                or regst.force_inplace >= 0 or _has_ref(pb, regst)):
            continue
        (desc,) = regst.blobs.values()
        if desc.dtype != out_desc.dtype or desc.elem_cnt != math.prod(hi - lo for lo, hi in box):
            continue
        if box[1:] != out_box[1:] or not out_box[0][0] <= box[0][0] <= box[0][1] <= out_box[0][1]:
            continue  # not whole rows of the output: its bytes are strided there
        row = math.prod(hi - lo for lo, hi in out_box[1:]) * out_desc.dtype.itemsize
        return regst, (box[0][0] - out_box[0][0]) * row
    return None


def _has_ref(pb: PlanBuilder, regst: BuilderRegst) -> bool:
    """Whether a variable-ref clone's register (inplace.py) is already this variable's memory."""
    return any(r.force_inplace == regst.regst_desc_id for r in pb.regsts)


def check_piece_grants(plan: Plan) -> None:
    """Each register holding another as a piece (``piece_inplace_consumed_regst_desc_id``): its producer consumes
    that register, both are one register, and that one lies exactly ``piece_inplace_offset`` bytes into it."""
    tasks = {t.task_id: t for t in plan.tasks}
    regsts = plan.regst_descs
    for regst in regsts.values():
        rid, offset = regst.piece_inplace_consumed_regst_desc_id, regst.piece_inplace_offset
        if rid < 0:
            continue
        producer = tasks[regst.producer_task_id]
        where = f"regst {regst.regst_desc_id} of {producer.name} (job {plan.job_names[producer.job_id]!r})"
        piece = regsts.get(rid)
        if piece is None or rid not in producer.consumed_ids:
            raise CompileError(f"{where} holds regst {rid} as a piece, but its task does not consume it")
        used = max((piece.blob_offsets[lbn] + d.nbytes for lbn, d in piece.lbi2blob_desc.items()), default=0)
        if (piece.mem_block_id != regst.mem_block_id or piece.mem_block_offset != regst.mem_block_offset + offset
                or offset < 0 or offset + used > regst.regst_size
                or (regst.register_num, piece.register_num) != (1, 1)):
            raise CompileError(f"{where} holds regst {rid} as its piece at byte {offset}, but that one does not lie "
                               f"there: block {piece.mem_block_id}+{piece.mem_block_offset}, {piece.regst_size} B "
                               f"x{piece.register_num} against block {regst.mem_block_id}+{regst.mem_block_offset}, "
                               f"{regst.regst_size} B x{regst.register_num}")


def piece_roots(a: RegstDesc, b: RegstDesc, regsts: Mapping[int, RegstDesc]) -> tuple[RegstDesc, RegstDesc]:
    """Two overlapping registers as the verifier should judge them: a register holding a piece stands for that
    piece against a register lying wholly inside the piece (the piece's other tenants: the variable's registers of
    other jobs), so exactly those overlaps are the piece's; any other stays the holder's own."""
    def within(x: RegstDesc, p: RegstDesc) -> bool:
        return (p.mem_block_offset <= x.mem_block_offset and x.mem_block_offset + x.regst_size * x.register_num
                <= p.mem_block_offset + p.regst_size * p.register_num)

    if a.piece_inplace_consumed_regst_desc_id >= 0 and within(b, regsts[a.piece_inplace_consumed_regst_desc_id]):
        a = regsts[a.piece_inplace_consumed_regst_desc_id]
    if b.piece_inplace_consumed_regst_desc_id >= 0 and within(a, regsts[b.piece_inplace_consumed_regst_desc_id]):
        b = regsts[b.piece_inplace_consumed_regst_desc_id]
    return a, b
