"""The Schedule: what one captured call of a job function does, as plain data (the run path's IR stage).

The scheduler is deterministic, so a call from an idle runtime back to the same idle state is a fixed transition
(flowlab/replay/capture.py captures it while protocol stepping runs the call). ``Schedule`` is that transition
written down like a Job or a Plan: frozen, printable one step per line, JSON, and checked against its Plan by
``check_schedule``:

- ``steps``: the kernel acts in act order (task, op, thread, the registers each reads and writes) and the
  critical-section notifies (a CallbackNotify act finishing its job instance);
- ``delta``: how the call moves the protocol's counters (acts per actor, registers' act ids, the ids the main
  job's actors wrote, the wait-ids source's registers by free-list position, rotated free lists), which
  replay/settle.py applies instead of stepping the protocol;
- ``segments`` and ``lanes``: filled in by lowering, the steps each fused segment runs and each lane's steps.

Registers are named ``(regst_desc_id, index)`` and printed ``r12#0``; tasks by their Plan ``task_id``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from . import serialize
from .plan import short_task_id

if TYPE_CHECKING:
    from .plan import Plan

Reg = tuple[int, int]  # (regst_desc_id, register index)


def _regs(regs: tuple[Reg, ...]) -> str:
    return " ".join(f"r{rid}#{index}" for rid, index in regs) or "-"


@dataclass(frozen=True)
class ScheduleStep:
    """One step: a kernel act of ``task_id`` reading and writing these registers, or (``section`` set) the
    notify a CallbackNotify act makes: critical section ``section``'s oldest job instance is finished."""

    task_id: int
    name: str  # the task's name (its op's)
    op_type: str  # the op its kernel runs ("" for a task with no op)
    task_type: str
    machine_id: int
    thrd_id: int
    reads: tuple[Reg, ...] = ()  # in the act's order: what ActEvent.read lists
    writes: tuple[Reg, ...] = ()  # what ActEvent.written lists
    section: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "reads", tuple(tuple(r) for r in self.reads))
        object.__setattr__(self, "writes", tuple(tuple(r) for r in self.writes))

    @property
    def is_notify(self) -> bool:
        return self.section is not None

    def __str__(self) -> str:
        head = f"{short_task_id(self.task_id)} {self.task_type} {self.name}"
        if self.is_notify:
            return f"{head} notifies cs {self.section}"
        op = f" [{self.op_type}]" if self.op_type and self.op_type != self.task_type else ""
        return f"{head}{op} reads {_regs(self.reads)} writes {_regs(self.writes)}"


@dataclass(frozen=True)
class ScheduleDelta:
    """How one call moves the protocol's counters; replay/settle.py applies it ``times`` times at once."""

    acts: int  # the runtime's act count after the call, less before
    actor_acts: tuple[tuple[int, int], ...] = ()  # (task_id, acts): each actor's act id grows by that much
    # (regst_desc_id, index, producer task_id, offset): the register's act id is its producer's + offset after
    regst_offsets: tuple[tuple[int, int, int, int], ...] = ()
    id_writes: tuple[tuple[int, int, int], ...] = ()  # (regst_desc_id, index, id) a main-job actor left in it
    # the wait-ids source's registers, by position in its free list: (position, act id offset, id written)
    wait_writes: tuple[tuple[int, int, int], ...] = ()
    # (task_id, regst_desc_id, register indices): a free list's order after the call (rotating registers)
    rotations: tuple[tuple[int, int, tuple[int, ...]], ...] = ()

    def __post_init__(self) -> None:
        for name in ("actor_acts", "regst_offsets", "id_writes", "wait_writes"):
            object.__setattr__(self, name, tuple(tuple(x) for x in getattr(self, name)))
        object.__setattr__(self, "rotations", tuple((t, r, tuple(order)) for t, r, order in self.rotations))

    def lines(self, per_line: int = 8) -> list[str]:
        """The delta as text: each kind of entry on its own lines, ``per_line`` entries a line."""
        groups = [("acts", [f"{short_task_id(t)}+{n}" for t, n in self.actor_acts]),
                  ("act ids", [f"r{rid}#{i}={short_task_id(p)}{off:+d}" for rid, i, p, off in self.regst_offsets]),
                  ("ids", [f"r{rid}#{i}={value}" for rid, i, value in self.id_writes]),
                  ("wait ids", [f"free[{pos}]=act{off:+d},id {value}" for pos, off, value in self.wait_writes]),
                  ("rotations", [f"{short_task_id(t)} r{rid}=[{' '.join(f'#{i}' for i in order)}]"
                                 for t, rid, order in self.rotations])]
        out = []
        for label, entries in groups:
            for k in range(0, len(entries), per_line):
                head = f"{label}:" if k == 0 else " " * (len(label) + 1)
                out.append(f"{head} {' '.join(entries[k:k + per_line])}")
        return out


@dataclass(frozen=True)
class Schedule:
    """A captured call: its launch list, its steps in act order, the protocol-state delta, and its lowering."""

    key: tuple[str, ...]  # the job names the call launches, in order
    steps: tuple[ScheduleStep, ...]
    delta: ScheduleDelta
    segments: tuple[tuple[int, ...], ...] = ()  # per fused segment: the indices of the steps it runs
    # per lane (lanes on OS threads): its Plan thread (machine_id, thrd_id) and its steps' indices, in lane order
    lanes: tuple[tuple[tuple[int, int], tuple[int, ...]], ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", tuple(self.key))
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "segments", tuple(tuple(s) for s in self.segments))
        object.__setattr__(self, "lanes", tuple((tuple(k), tuple(ix)) for k, ix in self.lanes))

    @property
    def acts(self) -> int:
        return self.delta.acts

    @property
    def kernel_steps(self) -> tuple[ScheduleStep, ...]:
        return tuple(s for s in self.steps if not s.is_notify)

    def acts_of(self) -> dict[int, int]:
        """Acts per actor (task_id -> acts) the call performs."""
        return dict(self.delta.actor_acts)

    def lowered(self, segments: tuple[tuple[int, ...], ...] = (),
                lanes: tuple[tuple[tuple[int, int], tuple[int, ...]], ...] = ()) -> Schedule:
        """The same schedule with its lowering (fused segments, lanes) filled in."""
        return replace(self, segments=segments, lanes=lanes)

    def to_json(self, indent: int | None = None) -> str:
        return serialize.to_json(self, indent)

    @staticmethod
    def from_json(text: str) -> Schedule:
        value = serialize.from_json(text)
        if not isinstance(value, Schedule):
            raise ValueError(f"expected a Schedule in this flowlab JSON, found a {type(value).__name__}")
        return value

    def __str__(self) -> str:
        kernels = len(self.kernel_steps)
        lines = [f"schedule {' + '.join(self.key)}: {self.acts} acts, {kernels} kernel steps, "
                 f"{len(self.steps) - kernels} notifies"]
        width = len(str(max(len(self.steps) - 1, 0)))
        lines.extend(f"  #{i:<{width}} {step}" for i, step in enumerate(self.steps))
        lines.append("delta:")
        lines.extend(f"  {line}" for line in self.delta.lines())
        if self.segments:
            lines.append("segments:")
            lines.extend(f"  seg {k}: {_indices(ix)}" for k, ix in enumerate(self.segments))
        if self.lanes:
            lines.append("lanes:")
            lines.extend(f"  lane {m}:{t}: {_indices(ix)}" for (m, t), ix in self.lanes)
        return "\n".join(lines)

    def __repr__(self) -> str:
        lowered = f", {len(self.segments)} segments" if self.segments else ""
        lowered += f", {len(self.lanes)} lanes" if self.lanes else ""
        return (f"<Schedule {' + '.join(self.key)}: {self.acts} acts, {len(self.kernel_steps)} kernel steps"
                f"{lowered}>")


serialize.register(ScheduleStep, ScheduleDelta, Schedule)


def _indices(indices: tuple[int, ...]) -> str:
    return " ".join(f"#{i}" for i in indices)


class ScheduleError(ValueError):
    """A Schedule that does not fit its Plan (check_schedule)."""


def check_schedule(schedule: Schedule, plan: Plan) -> None:
    """Raise ScheduleError, naming the step (or the delta's entry), where ``schedule`` does not fit ``plan``:
    an unknown task; a register read the task does not consume or written it does not produce, or past the
    desc's register_num; a notify of an unknown critical section; a task whose kernel steps do not number its
    acts in the delta; delta entries on registers or tasks the Plan lacks; segments or lanes naming steps the
    schedule lacks, or a step run twice."""
    tasks = {t.task_id: t for t in plan.tasks}
    regst_descs = plan.regst_descs
    errors: list[str] = []

    def register(where: str, reg: Reg, allowed: tuple[int, ...], verb: str, task_name: str) -> None:
        rid, index = reg
        if rid not in allowed:
            ids = ", ".join(f"r{i}" for i in allowed) or "none"
            role = "consume" if verb == "reads" else "produce"
            errors.append(f"{where}: {verb} r{rid}#{index}, which task {task_name} does not {role} "
                          f"(it {role}s {ids})")
        elif not 0 <= index < regst_descs[rid].register_num:
            errors.append(f"{where}: {verb} r{rid}#{index}, but r{rid} has {regst_descs[rid].register_num} "
                          "registers")

    steps_of: dict[int, list[int]] = {}
    for i, step in enumerate(schedule.steps):
        where = f"step #{i} ({short_task_id(step.task_id)} {step.name})"
        task = tasks.get(step.task_id)
        if task is None:
            errors.append(f"{where}: task {step.task_id} is not in the Plan")
            continue
        steps_of.setdefault(step.task_id, []).append(i)
        if step.is_notify:
            if not 0 <= step.section < len(plan.critical_sections):  # type: ignore[operator]
                errors.append(f"{where}: notifies critical section {step.section}, but the Plan has "
                              f"{len(plan.critical_sections)}")
            continue
        produced = tuple(d.regst_desc_id for d in task.produced_regst_desc.values())
        for reg in step.reads:
            register(where, reg, task.consumed_ids, "reads", task.name)
        for reg in step.writes:
            register(where, reg, produced, "writes", task.name)
    acts = schedule.acts_of()
    for task_id, indices in steps_of.items():
        if acts.get(task_id, 0) != len(indices):  # a task with a kernel runs it on every act
            errors.append(f"step #{indices[0]} ({short_task_id(task_id)} {tasks[task_id].name}): the task has "
                          f"{len(indices)} steps (#{', #'.join(map(str, indices))}) but the delta counts "
                          f"{acts.get(task_id, 0)} acts")
    for task_id, n in schedule.delta.actor_acts:
        if task_id not in tasks:
            errors.append(f"delta acts: task {task_id} is not in the Plan")
        elif n <= 0:
            errors.append(f"delta acts: task {short_task_id(task_id)} acts {n} times")
    if sum(n for _, n in schedule.delta.actor_acts) != schedule.acts:
        errors.append(f"delta: the actors' acts add up to {sum(n for _, n in schedule.delta.actor_acts)}, "
                      f"the call's to {schedule.acts}")
    for rid, index, producer, _ in schedule.delta.regst_offsets:
        desc = regst_descs.get(rid)
        if desc is None or not 0 <= index < desc.register_num:
            errors.append(f"delta act ids: register r{rid}#{index} is not in the Plan")
        elif desc.producer_task_id != producer:
            errors.append(f"delta act ids: r{rid}#{index} is produced by {short_task_id(desc.producer_task_id)}, "
                          f"not {short_task_id(producer)}")
    for rid, index, _ in schedule.delta.id_writes:
        desc = regst_descs.get(rid)
        if desc is None or not 0 <= index < desc.register_num:
            errors.append(f"delta ids: register r{rid}#{index} is not in the Plan")
    for task_id, rid, order in schedule.delta.rotations:
        desc = regst_descs.get(rid)
        if desc is None or desc.producer_task_id != task_id or len(set(order)) != len(order) \
                or not all(0 <= i < desc.register_num for i in order):
            errors.append(f"delta rotation: r{rid} [{', '.join(map(str, order))}] is not a free list of task "
                          f"{short_task_id(task_id)}'s registers")
    _check_lowering(schedule, errors)
    if errors:
        more = f"\n  ... and {len(errors) - 8} more" if len(errors) > 8 else ""
        raise ScheduleError(f"schedule {' + '.join(schedule.key)} does not fit its Plan:\n  "
                            + "\n  ".join(errors[:8]) + more)


def _check_lowering(schedule: Schedule, errors: list[str]) -> None:
    n = len(schedule.steps)
    for what, groups in (("segment", schedule.segments), ("lane", tuple(ix for _, ix in schedule.lanes))):
        seen: dict[int, int] = {}
        for k, indices in enumerate(groups):
            for i in indices:
                if not 0 <= i < n:
                    errors.append(f"{what} {k}: step #{i} is not in the schedule ({n} steps)")
                elif i in seen:
                    errors.append(f"{what} {k}: step #{i} is already in {what} {seen[i]}")
                else:
                    seen[i] = k
        if what == "lane" and groups and len(seen) != n:
            missing = sorted(set(range(n)) - set(seen))
            errors.append(f"lanes: step #{missing[0]} is in no lane" if missing else "lanes: steps missing")
