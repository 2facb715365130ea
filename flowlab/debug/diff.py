"""Two compilations side by side: ``flow.debug.diff(plan_a, plan_b)`` -> ``PlanDiff``.

Ids differ between two compilations, so things are matched by what they are: a task by (job name, op name,
parallel_id), a register by (its producer task's key, the produced name such as "out"), a memory block by the set
of registers it holds. A task is changed when its type, thread, parallel_num, op type, attrs, inputs or produced
blobs differ; a register when its blobs, register_num, size or place (block, offset) differ; a block when its size,
mem_case or reuse flag differ. ``marks_a``/``marks_b`` map the payload ids of each side ("t:<task_id>",
"r:<regst_desc_id>", "b:<mem_block_id>") to "removed"/"changed" (a) and "added"/"changed" (b), for the views.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ir import Plan

TaskKey = tuple[str, str, int]  # job name, op name, parallel_id
RegstKey = tuple[TaskKey, str]  # producer, produced name


def _task_label(key: TaskKey) -> str:
    job, op, parallel_id = key
    return f"{job}/{op}" + (f" [{parallel_id}]" if parallel_id else "")


def _regst_label(key: RegstKey) -> str:
    return f"{_task_label(key[0])} {key[1]}"


@dataclass
class _Side:
    """One plan's things by key, with what is compared of each."""

    plan: Plan
    tasks: dict[TaskKey, tuple[int, dict[str, str]]] = field(default_factory=dict)  # key -> (task_id, fields)
    regsts: dict[RegstKey, tuple[int, dict[str, str]]] = field(default_factory=dict)
    blocks: dict[frozenset[RegstKey], tuple[int, dict[str, str]]] = field(default_factory=dict)

    @classmethod
    def of(cls, plan: Plan) -> _Side:
        side = cls(plan)
        key_of_task = {t.task_id: (plan.job_names[t.job_id], t.name, t.parallel_id) for t in plan.tasks}
        block_key: dict[int, frozenset[RegstKey]] = {}
        tenants: dict[int, list[RegstKey]] = {}
        for task in plan.tasks:
            for name, regst in task.produced_regst_desc.items():
                if regst.mem_block_id >= 0:
                    tenants.setdefault(regst.mem_block_id, []).append((key_of_task[task.task_id], name))
        for block_id, keys in tenants.items():
            block_key[block_id] = frozenset(keys)
        for task in plan.tasks:
            key = key_of_task[task.task_id]
            op = task.exec_sequence[0]
            produced = {}
            for name, regst in task.produced_regst_desc.items():
                blobs = " ".join(f"{lbn}:{desc}" for lbn, desc in regst.lbi2blob_desc.items()) or "ctrl"
                produced[name] = blobs
                place = "-" if regst.mem_block_id < 0 else \
                    f"block of {len(block_key[regst.mem_block_id])} registers +{regst.mem_block_offset}"
                side.regsts[(key, name)] = (regst.regst_desc_id, {
                    "blobs": blobs, "register_num": str(regst.register_num), "size": f"{regst.regst_size:,} B",
                    "place": place})
            consumed = sorted(_regst_label(side_key) for side_key in
                              (_producer_key(plan, key_of_task, i) for i in task.consumed_ids))
            side.tasks[key] = (task.task_id, {
                "task_type": task.task_type, "thrd_id": str(task.thrd_id), "parallel_num": str(task.parallel_num),
                "op_type": op.op_type, **{f"attr {k}": str(v) for k, v in op.attrs.items()},
                "consumes": ", ".join(consumed), **{f"produces {n}": b for n, b in sorted(produced.items())}})
        for block in plan.mem_blocks:
            key = block_key.get(block.mem_block_id, frozenset({((f"<empty block {block.mem_block_id}>", "", 0), "")}))
            side.blocks[key] = (block.mem_block_id, {"size": f"{block.mem_size:,} B", "mem_case": block.mem_case,
                                                     "reuse": str(block.enable_reuse_mem)})
        return side


def _producer_key(plan: Plan, key_of_task: dict[int, TaskKey], regst_id: int) -> RegstKey:
    desc = plan.regst_descs[regst_id]
    producer = plan.task(desc.producer_task_id)
    name = next(n for n, r in producer.produced_regst_desc.items() if r.regst_desc_id == regst_id)
    return key_of_task[desc.producer_task_id], name


@dataclass
class Change:
    what: str  # "task" | "register" | "block"
    status: str  # "added" | "removed" | "changed"
    label: str
    id_a: int | None
    id_b: int | None
    fields: dict[str, tuple[str | None, str | None]]  # changed field -> (a, b)

    def __str__(self) -> str:
        sign = {"added": "+", "removed": "-", "changed": "~"}[self.status]
        if self.status == "changed":
            detail = "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in self.fields.items())
        else:
            detail = ", ".join(f"{k} {a if a is not None else b}" for k, (a, b) in self.fields.items()
                               if k in ("task_type", "blobs", "size", "op_type"))
        return f"  {sign} {self.label}" + (f": {detail}" if detail else "")


def _compare(what: str, a: dict[Any, tuple[int, dict[str, str]]], b: dict[Any, tuple[int, dict[str, str]]],
             label: Any) -> list[Change]:
    changes = []
    for key in sorted(a.keys() | b.keys(), key=lambda k: str(label(k))):
        if key not in b:
            changes.append(Change(what, "removed", label(key), a[key][0], None,
                                  {k: (v, None) for k, v in a[key][1].items()}))
        elif key not in a:
            changes.append(Change(what, "added", label(key), None, b[key][0],
                                  {k: (None, v) for k, v in b[key][1].items()}))
        else:
            fa, fb = a[key][1], b[key][1]
            fields = {k: (fa.get(k), fb.get(k)) for k in sorted(fa.keys() | fb.keys()) if fa.get(k) != fb.get(k)}
            if fields:
                changes.append(Change(what, "changed", label(key), a[key][0], b[key][0], fields))
    return changes


def _block_label(key: frozenset[RegstKey]) -> str:
    names = sorted(_regst_label(k) for k in key)
    return f"block of {names[0]}" + (f" (+{len(names) - 1} more)" if len(names) > 1 else "")


@dataclass
class PlanDiff:
    """What differs between two Plans; ``print(diff)`` lists it, ``marks_a``/``marks_b`` mark each side's nodes."""

    tasks: list[Change]
    registers: list[Change]
    blocks: list[Change]
    bytes_a: int
    bytes_b: int
    marks_a: dict[str, str]
    marks_b: dict[str, str]
    # payload ids of the things on both sides, (a, b): every matched task and block, for a compare view's linking
    pairs: list[tuple[str, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.tasks or self.registers or self.blocks)

    def counts(self, what: str) -> dict[str, int]:
        changes = {"task": self.tasks, "register": self.registers, "block": self.blocks}[what]
        return {s: sum(c.status == s for c in changes) for s in ("added", "removed", "changed")}

    def __str__(self) -> str:
        if self.empty:
            return "plan diff: the plans are the same"
        lines = []
        for title, what, changes in (("tasks", "task", self.tasks), ("registers", "register", self.registers),
                                     ("memory blocks", "block", self.blocks)):
            c = self.counts(what)
            lines.append(f"{title}: {c['added']} added, {c['removed']} removed, {c['changed']} changed")
            lines += [str(change) for change in changes]
        lines.append(f"memory: {self.bytes_a:,} B -> {self.bytes_b:,} B")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def to_dict(self) -> dict[str, Any]:
        def rows(changes: list[Change]) -> list[dict[str, Any]]:
            return [{"status": c.status, "label": c.label, "a": c.id_a, "b": c.id_b,
                     "fields": {k: list(v) for k, v in c.fields.items()}} for c in changes]

        return {"tasks": rows(self.tasks), "registers": rows(self.registers), "blocks": rows(self.blocks),
                "bytes": [self.bytes_a, self.bytes_b], "marks_a": dict(self.marks_a), "marks_b": dict(self.marks_b)}


def diff(plan_a: Plan, plan_b: Plan) -> PlanDiff:
    """Compare two Plans (e.g. ``enable_reuse_mem`` on and off, two batch sizes): tasks, registers and memory
    blocks added, removed and changed, matched by what they are rather than by id."""
    for name, plan in (("plan_a", plan_a), ("plan_b", plan_b)):
        if not isinstance(plan, Plan):
            raise TypeError(f"flow.debug.diff compares two Plans (session.plan); {name} is {type(plan).__name__}")
    a, b = _Side.of(plan_a), _Side.of(plan_b)
    tasks = _compare("task", a.tasks, b.tasks, _task_label)
    registers = _compare("register", a.regsts, b.regsts, _regst_label)
    blocks = _compare("block", a.blocks, b.blocks, _block_label)
    marks_a: dict[str, str] = {}
    marks_b: dict[str, str] = {}
    for prefix, changes in (("t", tasks), ("r", registers), ("b", blocks)):
        for c in changes:
            if c.id_a is not None:
                marks_a[f"{prefix}:{c.id_a}"] = c.status
            if c.id_b is not None:
                marks_b[f"{prefix}:{c.id_b}"] = c.status
    pairs = [(f"t:{a.tasks[k][0]}", f"t:{b.tasks[k][0]}") for k in a.tasks if k in b.tasks]
    pairs += [(f"b:{a.blocks[k][0]}", f"b:{b.blocks[k][0]}") for k in a.blocks if k in b.blocks]
    return PlanDiff(tasks, registers, blocks, sum(m.mem_size for m in plan_a.mem_blocks),
                    sum(m.mem_size for m in plan_b.mem_blocks), marks_a, marks_b, pairs)
