"""build_plan's (plan_builder.py) sequence of named stages, each recorded, when asked, as a snapshot of its tables.

The stages are plan_builder's (OneFlow's CompileAndMergePlanOnMaster in order): a task per op and device, the
registers and boxing between them, the in-place grants of variables and gathered pieces, the main job linked in
place of each job's source tick, the CopyHd tasks of GPU placements, then the Plan's memory (plan_assemble.py).
Given a ``stages`` list, after each stage the tasks and registers are copied as plain tuples (no formatting, no
lookups: a few tuples per task) for ``flow.debug.rewrites`` to compare later (debug/rewrites.py, which builds the
Plan again to ask for them); compile passes none, so it pays nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ir import Job, Plan
from .gather_inplace import set_all_gather_inplace
from .gpu_plan import insert_copy_hd
from .inplace import set_variable_ref_inplace
from .plan_assemble import assemble

if TYPE_CHECKING:
    from .plan_builder import PlanBuilder

# (task_id, job_id, op, task_type, machine_id, thrd_id, parallel_id, parallel_num, consumed ((name, ids), ...),
#  produced ((name, regst_id), ...))
TaskRow = tuple[Any, ...]
# (regst_desc_id, producer task_id, regst_type, register_num, consumer task_ids, ((lbn, BlobDesc), ...),
#  force_inplace id, (piece id, piece offset))
RegstRow = tuple[Any, ...]


@dataclass(frozen=True)
class PlanSnapshot:
    """The builder's tasks and registers after a stage; ``plan`` is the Plan itself after the last stage."""

    tasks: tuple[TaskRow, ...]
    regsts: tuple[RegstRow, ...]
    plan: Plan | None = None


@dataclass(frozen=True)
class PlanStage:
    """One stage of build_plan: its name, the function that does it, and the tables before and after it."""

    name: str
    function: Callable[..., Any]
    before: PlanSnapshot
    after: PlanSnapshot


def snapshot(pb: PlanBuilder, previous: PlanSnapshot | None = None) -> PlanSnapshot:
    """The builder's tables as tuples; a row equal to ``previous``'s is that row (most stages change few rows, so
    the stages share most of their memory). The cyclic collector is off meanwhile: the rows are all alive until it
    returns, and its rescans of the jobs' many objects would cost more than the copying."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _snapshot(pb, previous or EMPTY)
    finally:
        if enabled:
            gc.enable()


def _shared(rows: tuple[tuple[Any, ...], ...], previous: tuple[tuple[Any, ...], ...]) -> tuple[tuple[Any, ...], ...]:
    """``rows`` with each row equal to the previous snapshot's row of the same id replaced by that one (ids are
    handed out in order, so a row's id is its index in both, until a stage inserts)."""
    n = len(previous)
    return tuple(previous[i] if i < n and previous[i] == row else row for i, row in enumerate(rows))


def _snapshot(pb: PlanBuilder, previous: PlanSnapshot) -> PlanSnapshot:
    tasks = tuple((t.task_id, t.job_id, t.op, t.task_type, t.machine_id, t.thrd_id, t.parallel_id, t.parallel_num,
                   tuple((k, tuple(v)) for k, v in t.consumed.items()),
                   tuple((k, r.regst_desc_id) for k, r in t.produced.items())) for t in pb.tasks)
    regsts = tuple((r.regst_desc_id, r.producer, r.regst_type, r.register_num, tuple(r.consumers),
                    tuple(r.blobs.items()), r.force_inplace, r.piece_inplace) for r in pb.regsts)
    return PlanSnapshot(_shared(tasks, previous.tasks), _shared(regsts, previous.regsts))


EMPTY = PlanSnapshot((), ())


def run_stages(pb: PlanBuilder, all_jobs: list[Job], stages: list[PlanStage] | None = None) -> Plan:
    """build_plan's stages on the builder ``pb`` (its tasks for ``all_jobs``, the main job last), then the Plan;
    ``stages``, when given, receives a PlanStage per stage, in order."""
    cls, main_id = type(pb), len(all_jobs) - 1

    def add_tasks() -> None:
        for job_id, job in enumerate(all_jobs):
            pb.add_tasks(job_id, job)

    def connect() -> None:
        for job_id, job in enumerate(all_jobs):
            pb.connect(job_id, job)

    steps: tuple[tuple[str, Callable[..., Any], Callable[[], object]], ...] = (
        ("AddTasks", cls.add_tasks, add_tasks),
        ("ConnectRegstsAndBoxing", cls.connect, connect),
        ("SetVariableRefInplace", set_variable_ref_inplace, lambda: set_variable_ref_inplace(pb)),
        ("SetAllGatherInplace", set_all_gather_inplace, lambda: set_all_gather_inplace(pb)),
        ("LinkMainPlan", cls.link_main, lambda: pb.link_main(main_id, all_jobs[:-1])),
        ("InsertCopyHd", insert_copy_hd, lambda: insert_copy_hd(pb)),
    )
    before = EMPTY
    for name, function, run in steps:
        run()
        if stages is not None:
            after = snapshot(pb, before)
            stages.append(PlanStage(name, function, before, after))
            before = after
    plan = assemble(pb, all_jobs)
    if stages is not None:
        stages.append(PlanStage("PlanMemory", assemble, before, PlanSnapshot(before.tasks, before.regsts, plan)))
    return plan
