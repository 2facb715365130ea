"""Adversarial stepping for the in-place memory tests (tests/compiler/test_variable_ref_inplace.py,
test_gather_inplace.py):
act every variable update as soon as it is ready and chosen readers as late as any actor can act, which is what a
Plan without its ordering edges would let a scheduler do."""

from __future__ import annotations

from collections.abc import Callable

from flowlab.debug import Debugger


def data_successors(plan) -> dict[int, set[int]]:
    """task id -> the tasks consuming one of its data registers (control edges left out)."""
    regsts = plan.regst_descs
    out: dict[int, set[int]] = {}
    for t in plan.tasks:
        for name, ids in t.consumed_regst_desc_id.items():
            if name != "in_ctrl":
                for i in ids:
                    out.setdefault(regsts[i].producer_task_id, set()).add(t.task_id)
    return out


def reaches_any(successors: dict[int, set[int]], src: int, targets: set[int]) -> bool:
    """Whether a data path leads from task ``src`` to one of ``targets``."""
    seen, stack = {src}, [src]
    while stack:
        for nxt in successors.get(stack.pop(), ()):
            if nxt in targets:
                return True
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def update_tasks(plan) -> set[int]:
    return {t.task_id for t in plan.tasks if t.exec_sequence and t.op_types[0].endswith("_update")}


def step_updates_first(dbg: Debugger, loose: Callable[[object], set[int]]) -> None:
    """Step ``dbg`` to the end of its call, always acting a ready update first and the tasks ``loose(plan)`` names
    (asserted non-empty: the test must have such a reader) last."""
    rt = dbg.runtime
    updates, late = update_tasks(rt.plan), loose(rt.plan)
    assert late  # the job has a reader the schedule can delay

    def rank(actor) -> int:
        return 0 if actor.actor_id in updates else 2 if actor.actor_id in late else 1

    while not dbg.finished:
        ready = [a for a in rt.ready if a.is_ready()]
        if ready:
            best = min(ready, key=rank)
            rt.ready.remove(best)
            rt.ready.appendleft(best)
        dbg.step()
