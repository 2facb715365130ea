"""Every rewrite a compile made, in order: ``flow.debug.rewrites(session)`` -> ``Rewrites``.

A compile rewrites the traced jobs pass by pass (compiler/passes.py records each as a PassRecord), builds the
system jobs and the main job, then turns all jobs into the Plan stage by stage (compiler/plan_stages.py; here the
Plan is built again from the compiled jobs, keeping the builder's tables after each stage). This module lines them
up as ``Rewrite``s with what each added, removed and changed: ops for a job rewrite, tasks and registers for a Plan
stage (named "job/op [parallel_id]" and "job/op [p] out", as ``flow.debug.diff`` names them), and the source line
of the function that did it.

Order: each user job's passes; each system job's build then its passes; the main job's build and its SBP pass
(compile runs that pass after the Plan, which does not read it: it is listed before the Plan stages so that the
last rewrite's ``after`` is the final Plan); then the Plan's stages.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..compiler import compile as compile_module
from ..compiler.main_job import make_main_job
from ..compiler.plan_builder import build_plan
from ..compiler.plan_stages import PlanSnapshot, PlanStage
from ..compiler.system_jobs import make_model_io_jobs, make_pull_job, make_push_job
from ..ir import Job, Plan
from .rewrite_tables import PlanTables, plan_tables

BUILDERS: Mapping[str, tuple[str, Callable[..., Any]]] = {
    "push": ("MakePushJob", make_push_job), "pull": ("MakePullJob", make_pull_job),
    "model_io": ("MakeModelIoJobs", make_model_io_jobs), "main": ("MakeMainJob", make_main_job)}
PLAN = "Plan"  # the ``job`` of a Plan stage
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def source_of(function: Callable[..., Any]) -> str:
    """``path:line`` of the def of ``function`` (a partial's function), the path relative to flowlab's checkout."""
    while isinstance(function, functools.partial):
        function = function.func
    function = inspect.unwrap(function)
    path = inspect.getsourcefile(function) or "?"
    line = inspect.getsourcelines(function)[1]
    rel = os.path.relpath(path, _ROOT)
    return f"{rel if not rel.startswith('..') else path}:{line}"


def _job_items(job: Job) -> dict[str, tuple[Any, Any]]:
    """op name -> what a rewrite can change of it: its conf and its SBP signature."""
    return {op.name: (op, job.sbp_signatures.get(op.name)) for op in job.ops}


@dataclass(frozen=True)
class Rewrite:
    """One rewrite: a pass on one job (``before``/``after`` are Jobs) or a Plan stage (PlanTables). ``added``,
    ``removed``, ``changed``: node names (op names; task and register labels for a Plan stage)."""

    index: int
    name: str
    job: str  # the job's name, or "Plan"
    before: Job | PlanTables
    after: Job | PlanTables
    function: Callable[..., Any] = field(repr=False, compare=False)

    @property
    def kind(self) -> str:
        return "plan" if self.job == PLAN else "job"

    @functools.cached_property
    def _items(self) -> tuple[dict[str, Any], dict[str, Any]]:
        if isinstance(self.before, PlanTables) and isinstance(self.after, PlanTables):
            return self.before.items(), self.after.items()
        assert isinstance(self.before, Job) and isinstance(self.after, Job)
        return _job_items(self.before), _job_items(self.after)

    @property
    def added(self) -> tuple[str, ...]:
        old, new = self._items
        return tuple(name for name in new if name not in old)

    @property
    def removed(self) -> tuple[str, ...]:
        old, new = self._items
        return tuple(name for name in old if name not in new)

    @property
    def changed(self) -> tuple[str, ...]:
        old, new = self._items
        return tuple(name for name, item in new.items() if name in old and old[name] != item)

    @functools.cached_property
    def source(self) -> str:
        return source_of(self.function)

    def title(self) -> str:
        where = "the Plan" if self.kind == "plan" else f"job {self.job}"
        return f"#{self.index} {self.name} on {where} ({self.source})"

    def __str__(self, limit: int = 40) -> str:
        lines = [self.title(),
                 f"  {len(self.added)} added, {len(self.removed)} removed, {len(self.changed)} changed"]
        for sign, names in (("+", self.added), ("-", self.removed), ("~", self.changed)):
            lines += [f"  {sign} {name}" for name in names[:limit]]
            if len(names) > limit:
                lines.append(f"  {sign} ... {len(names) - limit} more")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


class Rewrites(Sequence[Rewrite]):
    """The ordered rewrites of one compile; ``print`` gives a table, ``[i]`` one rewrite, ``made(name)`` the
    rewrite that first added an op, task or register of that name. In a notebook it draws a stepper (←/→)."""

    def __init__(self, rewrites: Sequence[Rewrite], plan: Plan, traced: Mapping[str, Job]) -> None:
        self._rewrites = tuple(rewrites)
        self.plan = plan
        self.traced = dict(traced)  # user job name -> the job as traced (before any rewrite)

    def __len__(self) -> int:
        return len(self._rewrites)

    def __getitem__(self, i: Any) -> Any:
        """One rewrite, or a slice of them as Rewrites (``rw[-7:].show()``: the Plan's stages alone)."""
        if isinstance(i, slice):
            return Rewrites(self._rewrites[i], self.plan, self.traced)
        return self._rewrites[i]

    def __iter__(self) -> Iterator[Rewrite]:
        return iter(self._rewrites)

    def made(self, name: str, job: str | None = None) -> Rewrite:
        """The first rewrite whose ``added`` holds ``name``: an op name, a task ("job/op", "job/op [1]") or a
        register ("job/op out"); an op name made no rewrite of its own is looked up as the op of a task. ``job``
        looks in that job only (an interface op's name is an op of the user job and of its push or pull job)."""
        def mine(r: Rewrite, label: str = "") -> bool:
            return job is None or (r.job == job if r.kind == "job" else label.startswith(f"{job}/"))

        for r in self._rewrites:
            if name in r.added and mine(r, name):
                return r
        traced = [j for j, traced_job in self.traced.items() if traced_job.has_op(name) and job in (None, j)]
        if traced:
            raise KeyError(f"no rewrite made {name!r}: it is an op of the traced job {traced[0]!r} (the user's "
                           "code made it); its tasks are made by AddTasks: made('<job>/<op>')")
        for r in self._rewrites:
            if r.kind == "plan" and any(label.partition("/")[2].split(" ")[0] == name and mine(r, label)
                                        for label in r.added):
                return r
        raise KeyError(f"no rewrite made an op, task or register named {name!r}" + (f" in job {job!r}" if job else "")
                       + "; ops are named as in the job (e.g. 'System-Boxing-BoxingCopy-0'), tasks 'job/op' or "
                       "'job/op [1]', registers 'job/op out'")

    def __str__(self) -> str:
        rows = [("#", "rewrite", "job", "+", "-", "~", "source")]
        rows += [(str(r.index), r.name, r.job, str(len(r.added)), str(len(r.removed)), str(len(r.changed)), r.source)
                 for r in self._rewrites]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(c.rjust(w) if i in (0, 3, 4, 5) else c.ljust(w)
                                   for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in rows)

    def __repr__(self) -> str:
        return f"<Rewrites: {len(self)} rewrites, from the traced jobs to the Plan>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def show(self, index: int = 0) -> Any:
        """The stepper through these rewrites (notebook/rewrites_view.py), starting at ``index``."""
        from .display import show

        return show("rewrites", self, index)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return self.show()._repr_mimebundle_(include, exclude)


def plan_stages(result: Any) -> list[PlanStage]:
    """build_plan's stages for a compile result, each with the builder's tables before and after it. Compile does
    not record them (it would cost every compile for the few that are looked at): the Plan is built again from the
    result's completed jobs, which is deterministic; a Plan that came out different is an error, not a guess."""
    stages: list[PlanStage] = []
    cpu, gpu = result.device_nums
    _main, plan = build_plan(list(result.job_set)[:-1], cpu, None, gpu, stages)  # the main job is built again
    if plan != result.plan:
        raise RuntimeError("flow.debug.rewrites: building the Plan again from the compiled jobs gave a different "
                           f"Plan ({len(plan.tasks)} tasks against {len(result.plan.tasks)}): the Plan build is not "
                           "deterministic, so its stages cannot be shown")
    last = stages[-1]
    stages[-1] = PlanStage(last.name, last.function, last.before,
                           PlanSnapshot(last.after.tasks, last.after.regsts, result.plan))
    return stages


def _compiled(what: Any) -> Any:
    if hasattr(what, "device_nums") and hasattr(what, "passes"):
        return what
    if callable(getattr(what, "_compiled", None)):
        if getattr(what, "compiled", None) is None and callable(getattr(what, "try_init", None)):
            what.try_init()  # a session whose jobs are defined but not called yet: compile them as a call would
        return what._compiled()
    session = getattr(what, "session", None)  # a %%flowjob result
    if session is not None and session is not what:
        return _compiled(session)
    raise TypeError("flow.debug.rewrites takes a session (flow.default_session()), a compile result or a "
                    f"%%flowjob result; got {type(what).__name__}")


def rewrites(what: Any) -> Rewrites:
    """Every rewrite of ``what``'s compile (a session, compiled on demand; a CompileResult; a %%flowjob result)."""
    result = _compiled(what)
    final = {job.name: job for job in result.job_set}
    records = list(result.passes)
    main_records = [r for r in records if final[r.job_name].kind == "main"]
    records = [r for r in records if final[r.job_name].kind != "main"] + main_records
    out: list[Rewrite] = []
    traced: dict[str, Job] = {}
    last_of = {r.job_name: i for i, r in enumerate(records)}

    def add(name: str, job: str, before: Any, after: Any, function: Callable[..., Any]) -> None:
        out.append(Rewrite(len(out), name, job, before, after, function))

    for i, record in enumerate(records):
        kind = final[record.job_name].kind
        if record.job_name not in traced:
            traced[record.job_name] = record.before
            if kind in BUILDERS:
                name, builder = BUILDERS[kind]
                add(name, record.job_name, record.before.replace(ops=(), blob_descs={}, input_op_names=(),
                                                                  return_op_names=(), sbp_signatures={}),
                    record.before, builder)
        add(record.name, record.job_name, record.before, record.after, _pass_function(record.name, kind))
        if last_of[record.job_name] == i and final[record.job_name] != record.after:
            # compile gives a tp.ListNumpy watch its pieces after the passes (compile.watch_pieces)
            add("WatchPieces", record.job_name, record.after, final[record.job_name], compile_module.watch_pieces)
    names, kinds = result.plan.job_names, result.plan.job_kinds
    tables: dict[int, PlanTables] = {}  # by snapshot: a stage's after is the next one's before, made once
    for stage in plan_stages(result):
        for snap in (stage.before, stage.after):
            if id(snap) not in tables:
                tables[id(snap)] = plan_tables(snap, names, kinds)
        before, after = tables[id(stage.before)], tables[id(stage.after)]
        add(stage.name, PLAN, before, after, stage.function)
    return Rewrites(out, result.plan, {k: v for k, v in traced.items() if final[k].kind == "user"})


def _pass_function(name: str, kind: str) -> Callable[..., Any]:
    """The function of the recorded pass ``name`` (compile's pipelines name each pass with its function)."""
    from ..compiler.passes import JOB_COMPLETER

    table = dict([*compile_module.USER_JOB_PASSES, *JOB_COMPLETER, compile_module.SBP_PASS])
    if name not in table:
        raise KeyError(f"pass {name!r} is in no compile pipeline ({', '.join(table)}); add it to "
                       "compile.USER_JOB_PASSES or passes.JOB_COMPLETER")
    return table[name]


__all__ = ["PlanStage", "Rewrite", "Rewrites", "rewrites", "source_of"]
