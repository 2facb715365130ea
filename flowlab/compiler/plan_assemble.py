"""The last step of build_plan: the builder's tasks and registers as a Plan (OneFlow's Plan proto assembly).

Each data register gets its blobs' offsets (aligned) and its size; a register produced and consumed within one
compute chain may reuse memory over its chain positions (``enable_reuse_mem``), an interface op's is shared with
the same-named op of other jobs device by device (memory.plan_memory lays out both); then every task becomes a
TaskProto with its RegstDescs, and every job but the main job a critical section over its memory blocks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import CompileError
from ..ir import INTERFACE_OP_TYPES, CriticalSection, Job, Plan, RegstDesc, TaskProto
from ..ops.registry import get_op_def
from .gpu_plan import mem_cases
from .memory import RegstMem, align, plan_memory

if TYPE_CHECKING:
    from .plan_builder import PlanBuilder


def assemble(pb: PlanBuilder, jobs: list[Job]) -> Plan:
    task_of = {t.task_id: t for t in pb.tasks}
    chain_pos = {t.task_id: i for chain in pb.chains.values() for i, t in enumerate(chain)}
    chain_of = {t.task_id: t.chain_id for t in pb.tasks}
    layouts: dict[int, tuple[dict[str, int], int]] = {}
    mems: dict[int, RegstMem] = {}
    cases = mem_cases(pb)
    for regst in pb.regsts:
        if regst.regst_type != "data":
            continue
        offsets, size = {}, 0
        for lbn, desc in regst.blobs.items():
            offsets[lbn], size = size, size + align(desc.nbytes)
        layouts[regst.regst_desc_id] = (offsets, size)
        producer = task_of[regst.producer]
        job = jobs[producer.job_id]
        interface = None
        if producer.op.op_type in INTERFACE_OP_TYPES and producer.task_type == "NormalForward":
            interface = producer.op.name  # shared with the same-named op of other jobs, device by device
        lifetime = None
        in_chain = regst.producer in chain_pos and all(
            c in chain_pos and chain_of[c] == producer.chain_id for c in regst.consumers)
        if interface is None and in_chain and job.job_conf.get("enable_reuse_mem", True):
            positions = [chain_pos[regst.producer], *(chain_pos[c] for c in regst.consumers)]
            lifetime = (min(positions), max(positions))
        mems[regst.regst_desc_id] = RegstMem(regst.regst_desc_id, producer.job_id, size * regst.register_num,
                                             interface, lifetime, parallel_id=producer.parallel_id,
                                             machine_id=producer.machine_id, reuse_group=producer.chain_id,
                                             mem_case=cases[regst.regst_desc_id])
    inplace = {r.regst_desc_id: r.force_inplace for r in pb.regsts if r.force_inplace >= 0}
    pieces = {r.regst_desc_id: r.piece_inplace for r in pb.regsts if r.piece_inplace[0] >= 0}
    for rid, (piece, offset) in pieces.items():  # the piece's block makes room for the register around it
        mems[piece].room_before = max(mems[piece].room_before, offset)
        mems[piece].room_after = max(mems[piece].room_after, mems[rid].size - offset - mems[piece].size)
    blocks = plan_memory([m for rid, m in mems.items() if rid not in inplace and rid not in pieces])
    for rid, consumed in inplace.items():
        _set_force_inplace_mem_block(mems[rid], mems[consumed], layouts[rid][1], layouts[consumed][1])
    for rid, (piece, offset) in pieces.items():
        _set_piece_mem_block(mems[rid], mems[piece], offset)
    tasks = []
    for t in pb.tasks:
        produced = {}
        for name, r in t.produced.items():
            mem = mems.get(r.regst_desc_id)
            offsets, size = layouts.get(r.regst_desc_id, ({}, 0))
            produced[name] = RegstDesc(
                r.regst_desc_id, r.producer, tuple(r.consumers), r.register_num, r.regst_type, dict(r.blobs), offsets,
                mem.mem_case if mem else "host", mem.enable_reuse_mem if mem else False,
                mem.mem_block_id if mem else -1, mem.mem_block_offset if mem else 0, size,
                r.force_inplace, r.force_inplace, *r.piece_inplace,
            )
        tasks.append(TaskProto(t.task_type, t.machine_id, t.thrd_id, t.task_id, t.job_id, t.chain_id, t.order, (t.op,),
                               produced, {k: tuple(v) for k, v in t.consumed.items()}, t.parallel_id,
                               t.parallel_num, t.sbp_signature, tuple(t.input_regsts),
                               get_op_def(t.op.op_type).system))
    sections = []
    for job_id in range(len(jobs) - 1):
        block_ids = sorted({mems[r.regst_desc_id].mem_block_id for t in pb.tasks if t.job_id == job_id
                            for r in t.produced.values() if r.regst_desc_id in mems})
        sections.append(CriticalSection(job_id, job_id, "total_job", tuple(block_ids)))
    return Plan(
        tasks=tuple(tasks),
        mem_blocks=tuple(blocks),
        job_names=tuple(j.name for j in jobs),
        job_kinds=tuple(j.kind for j in jobs),
        critical_sections=tuple(sections),
        job_id2critical_section_ids={i: (i,) for i in range(len(jobs) - 1)},
    )


def _set_force_inplace_mem_block(mem: RegstMem, consumed: RegstMem, size: int, consumed_size: int) -> None:
    """OneFlow's PlanUtil::SetForceInplaceMemBlock: the register takes the memory of the one it consumes in place,
    which must be fixed (never reused by another register) and exactly as large."""
    if consumed.enable_reuse_mem or consumed.mem_block_id < 0 or size != consumed_size:
        raise CompileError(f"regst {mem.regst_desc_id} cannot be regst {consumed.regst_desc_id}'s memory in place: "
                             f"that one is {'reused' if consumed.enable_reuse_mem else 'fixed'} in block "
                             f"{consumed.mem_block_id}, {consumed_size} B against {size} B")
    mem.mem_block_id, mem.mem_block_offset = consumed.mem_block_id, consumed.mem_block_offset
    mem.mem_case, mem.enable_reuse_mem = consumed.mem_case, False


def _set_piece_mem_block(mem: RegstMem, piece: RegstMem, offset: int) -> None:
    """The register lies around the fixed register it holds as a piece (compiler/gather_inplace.py): that one
    ``offset`` bytes into it, in the room memory.plan_memory left around it."""
    if piece.enable_reuse_mem or piece.mem_block_id < 0 or piece.mem_block_offset < offset:
        raise CompileError(f"regst {mem.regst_desc_id} cannot hold regst {piece.regst_desc_id} as its piece at "
                           f"byte {offset}: that one is {'reused' if piece.enable_reuse_mem else 'fixed'} in block "
                           f"{piece.mem_block_id} at byte {piece.mem_block_offset}")
    mem.mem_block_id, mem.mem_block_offset = piece.mem_block_id, piece.mem_block_offset - offset
    mem.mem_case, mem.enable_reuse_mem = piece.mem_case, False
