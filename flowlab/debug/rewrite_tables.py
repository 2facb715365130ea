"""A Plan stage's snapshot (compiler/plan_stages.py) as named tables, to compare and to draw.

Tasks are named as ``flow.debug.diff`` names them, "job/op" (+ " [parallel_id]" past the first device), registers
"<task> <produced name>" ("job/op out"); ids stay the same from stage to stage, names say what a thing is. A task
is changed when its type, place (machine, thread), op, device count or what it consumes (by register name) differ;
a register when its type, register_num, consumers, blobs, in-place grants or, once memory is planned, its memory
(mem_case, block, offset, size, reuse) differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..compiler.plan_stages import PlanSnapshot, RegstRow, TaskRow
from ..ir import Plan, RegstDesc, TaskProto


@dataclass(frozen=True)
class PlanTables:
    """The Plan as it stood after a stage: task name -> fields, register name -> fields."""

    tasks: Mapping[str, tuple[Any, ...]]
    registers: Mapping[str, tuple[Any, ...]]
    snapshot: PlanSnapshot
    job_names: tuple[str, ...]
    job_kinds: tuple[str, ...]

    def items(self) -> dict[str, tuple[Any, ...]]:
        return {**self.tasks, **self.registers}

    def as_plan(self) -> Plan:
        """The Plan itself after the last stage; before it, a Plan of the tasks and registers made so far (no
        memory yet), for the views."""
        if self.snapshot.plan is not None:
            return self.snapshot.plan
        regsts = {row[0]: row for row in self.snapshot.regsts}
        tasks = []
        for order, (task_id, job_id, op, task_type, machine, thrd, pid, pnum, consumed, produced) in \
                enumerate(self.snapshot.tasks):
            descs = {}
            for name, rid in produced:
                _, producer, rtype, num, consumers, blobs, force, (piece, offset) = regsts[rid]
                descs[name] = RegstDesc(rid, producer, consumers, num, rtype, dict(blobs),
                                        force_inplace_consumed_regst_desc_id=force,
                                        piece_inplace_consumed_regst_desc_id=piece, piece_inplace_offset=offset)
            tasks.append(TaskProto(task_type, machine, thrd, task_id, job_id, 0, order, (op,), descs, dict(consumed),
                                   pid, pnum))
        return Plan(tuple(tasks), (), self.job_names, self.job_kinds, (), {})

    @property
    def plan(self) -> Plan:
        """``as_plan()``: so that the compare view takes tables as it takes a session (``show_diff(rw[21])``)."""
        return self.as_plan()

    def __repr__(self) -> str:
        return f"<PlanTables: {len(self.tasks)} tasks, {len(self.registers)} registers>"


def _plan_rows(plan: Plan) -> tuple[list[TaskRow], list[tuple[RegstRow, Any]]]:
    """The final Plan's tasks and registers as snapshot rows, each register with its memory (None for ctrl)."""
    tasks = [(t.task_id, t.job_id, t.exec_sequence[0], t.task_type, t.machine_id, t.thrd_id, t.parallel_id,
              t.parallel_num, tuple(t.consumed_regst_desc_id.items()),
              tuple((k, r.regst_desc_id) for k, r in t.produced_regst_desc.items())) for t in plan.tasks]
    regsts = []
    for t in plan.tasks:
        for r in t.produced_regst_desc.values():
            row = (r.regst_desc_id, r.producer_task_id, r.regst_desc_type, r.register_num, r.consumer_task_ids,
                   tuple(r.lbi2blob_desc.items()), r.force_inplace_consumed_regst_desc_id,
                   (r.piece_inplace_consumed_regst_desc_id, r.piece_inplace_offset))
            mem = None if r.regst_desc_type == "ctrl" else \
                (r.mem_case, r.mem_block_id, r.mem_block_offset, r.regst_size, r.enable_reuse_mem)
            regsts.append((row, mem))
    return tasks, regsts


def plan_tables(snapshot: PlanSnapshot, job_names: tuple[str, ...], job_kinds: tuple[str, ...]) -> PlanTables:
    if snapshot.plan is not None:
        task_rows, regst_mem = _plan_rows(snapshot.plan)
    else:
        task_rows, regst_mem = list(snapshot.tasks), [(row, None) for row in snapshot.regsts]
    label: dict[int, str] = {}
    seen: set[str] = set()
    for task_id, job_id, op, _type, _machine, _thrd, pid, *_rest in task_rows:
        name = f"{job_names[job_id] if job_id < len(job_names) else job_id}/{op.name}" + (f" [{pid}]" if pid else "")
        label[task_id] = name if name not in seen else f"{name} #{task_id}"  # one op, one task per device: unique
        seen.add(name)
    regst_label = {}
    for task_id, *_rest, produced in task_rows:
        for name, rid in produced:
            regst_label[rid] = f"{label[task_id]} {name}"
    tasks = {}
    for task_id, _job, op, task_type, machine, thrd, _pid, pnum, consumed, produced in task_rows:
        reads = tuple(sorted((name, tuple(sorted(regst_label.get(i, f"r{i}") for i in ids))) for name, ids in consumed))
        tasks[label[task_id]] = (task_type, machine, thrd, op, pnum, reads, tuple(name for name, _ in produced))
    registers = {}
    for (rid, _producer, rtype, num, consumers, blobs, force, (piece, offset)), mem in regst_mem:
        registers[regst_label[rid]] = (
            rtype, num, tuple(sorted(label[c] for c in consumers)), blobs,
            regst_label.get(force) if force >= 0 else None, (regst_label.get(piece), offset) if piece >= 0 else None,
            mem)
    return PlanTables(tasks, registers, snapshot, job_names, job_kinds)
