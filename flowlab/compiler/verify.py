"""Plan verifier: one producer per register, consistent consumers, no overlapping live memory, acyclic, and
registers that cross devices or machines only where boxing or a copy makes them right (verify_devices.py)."""

from __future__ import annotations

import bisect
import heapq

from ..errors import CompileError
from ..ir import JobSet, Plan
from ..ir.graph import find_cycle
from .gather_inplace import check_piece_grants, piece_roots
from .inplace import check_inplace_grants, check_inplace_order, inplace_root
from .memory import lifetimes_overlap
from .verify_devices import check_devices


def check_plan(plan: Plan, job_set: JobSet | None = None) -> None:
    """Raise CompileError describing the first broken invariant. ``job_set`` (the compiled jobs, logical
    shapes and SBP signatures): also check every task's physical blob shapes against its SBP."""
    tasks = {t.task_id: t for t in plan.tasks}
    producers: dict[int, int] = {}
    for t in plan.tasks:
        for regst in t.produced_regst_desc.values():
            if regst.regst_desc_id in producers:
                raise CompileError(f"regst {regst.regst_desc_id} has two producers")
            if regst.producer_task_id != t.task_id:
                raise CompileError(f"regst {regst.regst_desc_id} names producer {regst.producer_task_id}, not {t.name}")
            producers[regst.regst_desc_id] = t.task_id
    regsts = plan.regst_descs
    for t in plan.tasks:
        for rid in t.consumed_ids:
            if rid not in regsts:
                raise CompileError(f"task {t.name} consumes unknown regst {rid}")
            if t.task_id not in regsts[rid].consumer_task_ids:
                raise CompileError(f"task {t.name} consumes regst {rid} but is not among its consumers")
    check_inplace_grants(plan)
    check_piece_grants(plan)
    _check_memory(plan, tasks)
    check_devices(plan, job_set)
    successors: dict[int, list[int]] = {task_id: [] for task_id in tasks}
    for t in plan.tasks:
        for name, ids in t.consumed_regst_desc_id.items():
            if t.task_type == "ReentrantLock" and name == "end":
                continue  # the critical-section end -> lock back edge closes the loop by design
            for rid in ids:
                successors[regsts[rid].producer_task_id].append(t.task_id)
    cycle = find_cycle(successors)
    if cycle:
        raise CompileError(f"the task graph has a cycle: {' -> '.join(tasks[a].name for a in cycle)}")
    check_inplace_order(plan, successors)


def _check_memory(plan: Plan, tasks: dict) -> None:
    regsts = plan.regst_descs
    blocks = {b.mem_block_id: b for b in plan.mem_blocks}
    chains: dict[int, list] = {}
    for t in plan.tasks:
        chains.setdefault(t.chain_id, []).append(t)
    chain_pos: dict[int, int] = {}
    for members in chains.values():
        members.sort(key=lambda t: t.order_in_graph)
        chain_pos.update({t.task_id: i for i, t in enumerate(members)})
    by_block: dict[int, list] = {}
    for regst in regsts.values():
        if regst.is_ctrl:
            continue
        block = blocks.get(regst.mem_block_id)
        if block is None:
            raise CompileError(f"regst {regst.regst_desc_id} points at missing mem block {regst.mem_block_id}")
        end = regst.mem_block_offset + regst.regst_size * regst.register_num
        if end > block.mem_size:
            raise CompileError(f"regst {regst.regst_desc_id} ends at byte {end}, past block {block.mem_block_id}")
        by_block.setdefault(block.mem_block_id, []).append(regst)
    for block_id, group in by_block.items():
        block = blocks[block_id]
        if block.enable_reuse_mem and _plain(group, tasks):
            _check_reuse_sweep(block_id, group, chain_pos)
            continue
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                a_end = a.mem_block_offset + a.regst_size * a.register_num
                b_end = b.mem_block_offset + b.regst_size * b.register_num
                if a.mem_block_offset >= b_end or b.mem_block_offset >= a_end:
                    continue
                root_a, root_b = piece_roots(inplace_root(a, regsts), inplace_root(b, regsts), regsts)
                if root_a.regst_desc_id == root_b.regst_desc_id:  # one is the other's memory in place (exact:
                    continue  # check_inplace), or a piece of it (check_piece_grants)
                a, b = root_a, root_b  # a register in place of another overlaps what that one overlaps
                ja, jb = tasks[a.producer_task_id].job_id, tasks[b.producer_task_id].job_id
                if not block.enable_reuse_mem:
                    if ja == jb or tasks[a.producer_task_id].name != tasks[b.producer_task_id].name:
                        raise CompileError(f"regsts {a.regst_desc_id} and {b.regst_desc_id} overlap in fixed block "
                                           f"{block_id} without being one interface blob shared across jobs")
                    continue
                la, lb = _lifetime(a, chain_pos), _lifetime(b, chain_pos)
                if ja != jb or lifetimes_overlap(la, lb):
                    _raise_live_overlap(a, b, block_id, la, lb)


def _plain(group: list, tasks: dict) -> bool:
    """Registers of one job, none in place of another nor holding a piece: two of them may share bytes exactly
    when their lifetimes do not overlap, which a sweep checks (``_check_reuse_sweep``) without trying every pair."""
    return (len({tasks[r.producer_task_id].job_id for r in group}) == 1
            and all(r.inplace_consumed_regst_desc_id < 0 and r.piece_inplace_consumed_regst_desc_id < 0
                    for r in group))


def _check_reuse_sweep(block_id: int, group: list, chain_pos: dict[int, int]) -> None:
    """No two registers of a reused block share bytes while both are live: the pairwise check, as a sweep over
    lifetimes (each pair of a block with thousands of registers took the verifier quadratic time).

    Going through the registers by lifetime start, the ones still live when a register starts are exactly those
    whose lifetime overlaps it among the earlier ones. If no error was found so far, those are pairwise live at
    once, so their byte ranges are disjoint and sorted by start are sorted by end too: the ones overlapping a
    range [lo, hi) are the run from the first ending after lo to the last starting before hi."""
    spans = sorted((_lifetime(r, chain_pos), k) for k, r in enumerate(group))
    starts: list[int] = []  # live registers' byte ranges, sorted (disjoint: see above)
    ends: list[int] = []
    owners: list[int] = []
    ending: list[tuple[int, int, int]] = []  # heap of (last use, start, owner)
    for (first, last), k in spans:
        while ending and ending[0][0] < first:
            _, start, owner = heapq.heappop(ending)
            at = bisect.bisect_left(starts, start)
            while owners[at] != owner:  # byte ranges may start alike (empty ones)
                at += 1
            del starts[at], ends[at], owners[at]
        r = group[k]
        lo, hi = r.mem_block_offset, r.mem_block_offset + r.regst_size * r.register_num
        at = bisect.bisect_right(ends, lo)  # the first live range ending after lo ...
        if at < len(starts) and starts[at] < hi:  # ... starts before hi: they share bytes
            other = group[owners[at]]
            _raise_live_overlap(other, r, block_id, _lifetime(other, chain_pos), (first, last))
        at = bisect.bisect_left(starts, lo)
        while at < len(starts) and (starts[at], ends[at]) < (lo, hi):
            at += 1
        starts.insert(at, lo)
        ends.insert(at, hi)
        owners.insert(at, k)
        heapq.heappush(ending, (last, lo, k))


def _raise_live_overlap(a: object, b: object, block_id: int, la: tuple[int, int], lb: tuple[int, int]) -> None:
    raise CompileError(f"regsts {a.regst_desc_id} and {b.regst_desc_id} share bytes of block "  # type: ignore[attr-defined]
                       f"{block_id} while both are live ({la} and {lb})")


def _lifetime(regst, chain_pos: dict[int, int]) -> tuple[int, int]:
    positions = [chain_pos[regst.producer_task_id], *(chain_pos[c] for c in regst.consumer_task_ids)]
    return min(positions), max(positions)
