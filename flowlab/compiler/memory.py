"""Memory planning: interface blocks shared across jobs, and reuse inside a job by register lifetimes.

Registers of a job's compute chain (one chain per job and device) whose lifetimes (producer act .. last consumer
act, in chain order) do not overlap share bytes of one reusable block per chain (first fit). The chain's control
edges fix that order at run time, which is what makes the reuse safe. Interface registers (input/output/return/
variable) get one fixed block per interface name and device (parallel_id), shared by every job holding an op of
that name (OneFlow's MergeMemSharedInterfaceMemBlockBetweenJobs).
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass, field

from ..ir import MemBlock
from .gpu_plan import common_mem_case

ALIGN = 64


def align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class RegstMem:
    """The planner's view of one data register desc."""

    regst_desc_id: int
    job_id: int
    size: int  # bytes of all register_num registers
    interface_name: str | None  # set for interface registers
    lifetime: tuple[int, int] | None  # chain positions (first, last) when it may be reused, else None
    parallel_id: int = 0  # an interface blob is shared across jobs device by device
    machine_id: int = 0
    reuse_group: int = 0  # the chain whose registers may share one reusable block
    mem_case: str = "host"  # compiler/gpu_plan.py; a shared block takes its registers' common one
    mem_block_id: int = -1
    mem_block_offset: int = 0
    enable_reuse_mem: bool = False
    # bytes a register laid out around this one needs before and after it (compiler/gather_inplace.py): a fixed
    # register sits that far into its block, which is that much larger
    room_before: int = 0
    room_after: int = 0


@dataclass
class MemoryPlan:
    blocks: list[MemBlock] = field(default_factory=list)

    def new_block(self, job_ids: tuple[int, ...], size: int, reuse: bool, machine_id: int = 0,
                  mem_case: str = "host") -> int:
        block_id = len(self.blocks)
        self.blocks.append(MemBlock(block_id, job_ids, machine_id, mem_case, reuse, size))
        return block_id


def plan_memory(regsts: list[RegstMem]) -> list[MemBlock]:
    plan = MemoryPlan()
    # Interface registers: one block per name and device (parallel_id), shared by all jobs.
    by_name: dict[tuple[str, int], list[RegstMem]] = {}
    for r in regsts:
        if r.interface_name is not None:
            by_name.setdefault((r.interface_name, r.parallel_id), []).append(r)
    for group in by_name.values():
        jobs = tuple(sorted({r.job_id for r in group}))
        case = common_mem_case([r.mem_case for r in group], f"interface blob {group[0].interface_name!r}")
        offset = align(max(r.room_before for r in group))
        block_id = plan.new_block(jobs, offset + max(r.size + r.room_after for r in group), reuse=False,
                                  machine_id=group[0].machine_id, mem_case=case)
        for r in group:
            r.mem_block_id, r.mem_block_offset, r.mem_case = block_id, offset, case
    # Reusable registers: first fit by lifetime inside one block per compute chain (a job's chain on a device).
    by_chain: dict[tuple[int, str], list[RegstMem]] = {}
    for r in regsts:
        if r.interface_name is None and r.lifetime is not None:
            by_chain.setdefault((r.reuse_group, r.mem_case), []).append(r)
    for _chain, group in sorted(by_chain.items()):
        placed = _first_fit_all(group)
        block_id = plan.new_block((group[0].job_id,), max(r.mem_block_offset + r.size for r in placed), reuse=True,
                                  machine_id=group[0].machine_id, mem_case=group[0].mem_case)
        for r in placed:
            r.mem_block_id, r.enable_reuse_mem = block_id, True
    # Everything else: a block of its own.
    for r in regsts:
        if r.mem_block_id < 0:
            r.mem_block_offset = align(r.room_before)
            r.mem_block_id = plan.new_block((r.job_id,), r.mem_block_offset + r.size + r.room_after, reuse=False,
                                            machine_id=r.machine_id, mem_case=r.mem_case)
    return plan.blocks


def lifetimes_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _first_fit_all(group: list[RegstMem]) -> list[RegstMem]:
    """Give each register of one chain the lowest offset clear of every register placed before it whose lifetime
    overlaps its own (first fit, in order of lifetime start, larger first); returns them in that order.

    The registers placed so far that are still live are kept sorted by offset, and one whose lifetime ended is
    dropped for good: the next registers start no earlier, so it overlaps none of them. The busy ranges each
    register fits around are therefore exactly those of a scan over every placed register (the same offsets),
    without the scan: a scan made the planning quadratic in a deep model's registers."""
    placed = sorted(group, key=lambda r: (r.lifetime, -r.size))
    # (start, end aligned up, order) of the live placed registers, sorted: the end kept aligned, as the scan asks
    # for it (the live ranges are disjoint and start aligned, so the order is the same as by the end itself)
    busy: list[tuple[int, int, int]] = []
    ending: list[tuple[int, tuple[int, int, int]]] = []  # heap of (last use, its busy entry)
    for order, r in enumerate(placed):
        assert r.lifetime is not None
        first, last = r.lifetime
        while ending and ending[0][0] < first:  # lifetimes are closed ranges: [first, last]
            del busy[bisect.bisect_left(busy, heapq.heappop(ending)[1])]
        offset, size = 0, r.size
        for start, end, _ in busy:  # the first gap it fits in: O(live registers) each, the planning's hot loop
            if offset + size <= start:
                break
            if end > offset:
                offset = end
        r.mem_block_offset = offset
        entry = (offset, align(offset + size), order)
        bisect.insort(busy, entry)
        heapq.heappush(ending, (last, entry))
    return placed
