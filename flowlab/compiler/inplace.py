"""A variable's DistributeClone / DistributeSplit reads the variable in place (OneFlow's ``is_variable_ref``).

OneFlow marks the auto-converted clone (split) of a variable ``is_variable_ref`` (job_build_and_infer_ctx.cpp:
``set_is_variable_ref(IsVariableLbi(lbi))``), which makes its outputs mutable and a source of an in-place lbi
sub-graph (inplace_lbi_graph.cpp ``IsSourceNode``): each device's output is the variable's own memory. Here each
such task's ``out`` register asks for the memory of the variable register it consumes
(``force_inplace_consumed_regst_desc_id``, as OneFlow's task graph asks for a variable's ref register); plan
assembly gives it the variable's block and offset (``SetForceInplaceMemBlock``), and its task then copies nothing.

Only where that is exact: the variable's register holds this one blob (OneFlow: "we can ONLY set inplace when regst
has ONLY ONE blob"), with the out blob's shape and dtype on this device (a clone's piece is the whole blob; a split
variable's device holds its own piece already) and as many registers.

Sharing the variable's bytes is safe only if every reader of the shared register reads before the variable is
written in that run (an optimizer's update, an assign: OneFlow's inplace graph drops an in-place edge whose const
readers do not all reach the update op, ``FixConstRefOrMutRefConflictsToUpdtNode``). Each reader must reach each
such writer in the task graph; where one does not (no data path and no chain edge between them), the writer gets a
control edge from it, and where the writer reaches the reader (an edge would close a cycle) the register keeps its
own memory and the task copies, as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from ..ir import Plan, RegstDesc
from ..ops.registry import get_op_def

if TYPE_CHECKING:
    from .plan_builder import BuilderRegst, BuilderTask, PlanBuilder

VARIABLE_REF_OPS = frozenset({"distribute_clone", "distribute_split"})


def writes_variable(op_type: str, has_outputs: bool) -> bool:
    """Whether an op consuming a variable's register writes it: an update or assign (a non-system op with no
    outputs), model init or load. plan_builder.connect checks these read the variable's own registers."""
    return op_type in ("model_init", "model_load") or not (has_outputs or get_op_def(op_type).system)


def set_variable_ref_inplace(pb: PlanBuilder) -> None:
    """Mark each variable-ref clone (split) task's ``out`` as the variable register's memory, and order every
    reader of it before every writer of the variable in the job."""
    task_of = {t.task_id: t for t in pb.tasks}
    successors: dict[int, set[int]] | None = None
    for task in pb.tasks:
        op = task.op
        if op.op_type not in VARIABLE_REF_OPS or not op.attrs.get("is_variable_ref"):
            continue
        (in_id,) = task.consumed["in"]
        var_regst, out = pb.regsts[in_id], task.produced["out"]
        if task_of[var_regst.producer].op.op_type != "variable" or not _same_bytes(var_regst, out):
            continue
        if successors is None:
            successors = task_successors(pb)
        writers = [task_of[c] for c in var_regst.consumers if c != task.task_id
                   and task_of[c].job_id == task.job_id
                   and writes_variable(task_of[c].op.op_type, bool(task_of[c].op.output_lbns))]
        readers = [task_of[c] for c in out.consumers]
        if not order_readers_before_writers(pb, successors, readers, writers):
            continue  # a reader after the update: it must see the value the clone took, so keep the copy
        out.force_inplace = in_id


def order_readers_before_writers(pb: PlanBuilder, successors: dict[int, set[int]], readers: list[BuilderTask],
                                 writers: list[BuilderTask]) -> bool:
    """Make every reader of memory shared with a variable reach every writer of that variable (a control edge
    where no path exists yet; ``successors`` is kept up to date), so no update overtakes a reader. False, adding
    nothing, if some writer already reaches some reader: that reader must see the value from before the update,
    so the memory cannot be shared. One rule for every grant kind (variable ref here, piece in gather_inplace.py)."""
    if any(_reaches(successors, w.task_id, r.task_id) for w in writers for r in readers):
        return False
    for w in writers:
        for r in readers:
            if not _reaches(successors, r.task_id, w.task_id):
                ctrl = pb.ctrl_from(r, w)
                w.consume("in_ctrl", ctrl)
                successors.setdefault(ctrl.producer, set()).add(w.task_id)
                successors.setdefault(r.task_id, set()).add(ctrl.producer)
    return True


def _same_bytes(var_regst: BuilderRegst, out: BuilderRegst) -> bool:
    if len(var_regst.blobs) != 1 or len(out.blobs) != 1 or var_regst.register_num != out.register_num:
        return False
    (a,), (b,) = var_regst.blobs.values(), out.blobs.values()
    return a.shape == b.shape and a.dtype == b.dtype


def task_successors(pb: PlanBuilder) -> dict[int, set[int]]:
    by_id = {r.regst_desc_id: r for r in pb.regsts}
    out: dict[int, set[int]] = {t.task_id: set() for t in pb.tasks}
    for t in pb.tasks:
        for ids in t.consumed.values():
            for rid in ids:
                out.setdefault(by_id[rid].producer, set()).add(t.task_id)
    return out


def _reaches(successors: dict[int, set[int]], src: int, dst: int) -> bool:
    seen, stack = {src}, [src]
    while stack:
        node = stack.pop()
        if node == dst:
            return True
        for nxt in successors.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False



def inplace_root(regst: RegstDesc, regsts: Mapping[int, RegstDesc]) -> RegstDesc:
    """The register whose memory ``regst`` is: itself, or the one it consumes in place (followed through)."""
    while regst.inplace_consumed_regst_desc_id >= 0:
        regst = regsts[regst.inplace_consumed_regst_desc_id]
    return regst


def check_inplace_grants(plan: Plan) -> None:
    """Each granted in-place register (``inplace_consumed_regst_desc_id``): its producer consumes that register
    (OneFlow's CheckInplaceRegstDescId), and it lies at the same block and offset with the same size and register
    count (SetForceInplaceMemBlock's checks)."""
    tasks = {t.task_id: t for t in plan.tasks}
    regsts = plan.regst_descs
    for regst, other, where in _grants(plan, tasks, regsts):
        rid = regst.inplace_consumed_regst_desc_id
        if other is None or rid not in tasks[regst.producer_task_id].consumed_ids:
            raise CompileError(f"{where} is in place of regst {rid}, which its task does not consume")
        if (regst.mem_block_id, regst.mem_block_offset, regst.regst_size, regst.register_num) != (
                other.mem_block_id, other.mem_block_offset, other.regst_size, other.register_num):
            raise CompileError(f"{where} is in place of regst {rid} but does not lie exactly on its memory: block "
                               f"{regst.mem_block_id}+{regst.mem_block_offset}, {regst.regst_size} B x"
                               f"{regst.register_num} against block {other.mem_block_id}+{other.mem_block_offset}, "
                               f"{other.regst_size} B x{other.register_num}")


def check_inplace_order(plan: Plan, successors: dict[int, list[int]]) -> None:
    """Every reader of a granted in-place register (or of one holding another as a piece: gather_inplace.py)
    reaches every task of its job that writes the memory it shares
    (an update, an assign), so no update overtakes a reader. ``successors``: task id -> consumer task ids."""
    tasks = {t.task_id: t for t in plan.tasks}
    reach = {k: set(v) for k, v in successors.items()}
    for regst, other, where in (*_grants(plan, tasks, plan.regst_descs),
                                *_grants(plan, tasks, plan.regst_descs, "piece_inplace_consumed_regst_desc_id")):
        producer = tasks[regst.producer_task_id]
        writers = [tasks[c] for c in other.consumer_task_ids if c != producer.task_id
                   and tasks[c].job_id == producer.job_id and tasks[c].exec_sequence
                   and writes_variable(tasks[c].exec_sequence[0].op_type,
                                       bool(tasks[c].exec_sequence[0].output_lbns))]
        for w in writers:
            for c in regst.consumer_task_ids:
                if not _reaches(reach, c, w.task_id):
                    raise CompileError(f"{where} shares regst {other.regst_desc_id}'s memory in place, but its "
                                       f"reader {tasks[c].name} is not ordered before {w.name}, which writes that "
                                       "memory: the update could overtake the read")


def _grants(plan: Plan, tasks: dict, regsts: Mapping[int, RegstDesc], field: str = "inplace_consumed_regst_desc_id"
            ) -> Iterator[tuple[RegstDesc, Any, str]]:
    """Each register granted another's memory by ``field`` (the whole of it, or a piece: gather_inplace.py),
    with that register and a phrase naming it for errors."""
    for regst in regsts.values():
        rid = getattr(regst, field)
        if rid >= 0:
            producer = tasks[regst.producer_task_id]
            where = f"regst {regst.regst_desc_id} of {producer.name} (job {plan.job_names[producer.job_id]!r})"
            yield regst, regsts.get(rid), where
