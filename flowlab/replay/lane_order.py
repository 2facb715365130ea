"""The order a multi-device schedule's lanes run their steps in (replay/lanes.py): a simulated run of the lanes.

Any topological order of the conflicting pairs of steps (two steps touching the same bytes, one writing) gives
the capture's results; which one decides how long a lane waits on another. This one is list scheduling over the
conflict graph with the bytes a step touches as its cost.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np
from numpy.lib.array_utils import byte_bounds


def conflict_preds(ranges_of: list[list[tuple[int, int, bool]]]) -> list[list[int]]:
    """For each step, the earlier steps it conflicts with (a range of each overlapping, either writing), sorted.

    A sweep over the ranges by low address: those still open when a range starts are the ones it overlaps, and
    only pairs with a written range are met (an open read-only range is skipped by a read), so the cost follows
    the conflicts found, not the square of the steps (``conflicts`` against every range so far was quadratic)."""
    items = sorted((low, high, written, step) for step, ranges in enumerate(ranges_of)
                   for low, high, written in ranges)
    found: list[set[int]] = [set() for _ in ranges_of]
    open_written: list[tuple[int, int]] = []  # heaps of (high, step) of the ranges open so far
    open_read: list[tuple[int, int]] = []
    for low, high, written, step in items:
        for heap in (open_written, open_read):
            while heap and heap[0][0] <= low:
                heapq.heappop(heap)
        for heap in (open_written, open_read) if written else (open_written,):
            for _, other in heap:
                if other < step:
                    found[step].add(other)
                elif other > step:
                    found[other].add(step)
        heapq.heappush(open_written if written else open_read, (high, step))
    return [sorted(preds) for preds in found]


def successors_of(preds: list[list[int]]) -> list[list[int]]:
    """The inverse of ``conflict_preds``: each step's later conflicting steps, ascending."""
    succs: list[list[int]] = [[] for _ in preds]
    for step, before in enumerate(preds):
        for p in before:
            succs[p].append(step)
    return succs


def schedule_order(ranges_of: list[list[tuple[int, int, bool]]], lane_of: list[int],
                   follow: dict[int, int] | None = None, preds: list[list[int]] | None = None) -> list[int]:
    """The steps in the order of a simulated run of the lanes (list scheduling): each step costs the bytes it
    touches (a proxy for its time), and whenever a lane is free it starts, of its steps whose conflicting
    predecessors are all done, the one on the longest chain of costs to the end (what the other lanes will
    wait for longest), else waits for the earliest one to become ready. The order is the steps' start order.

    So each lane runs the work it can before it waits on another (a device computes its own gradients before
    the all-reduce needs the other's, whatever order the protocol happened to act in), and a small step another
    lane needs (the train step's counter, on the other device's thread) runs as soon as it can, not after a
    lane's whole backward. A step starts only after every conflicting predecessor, so this is a topological
    order of every conflicting pair: each keeps its capture order, the results stay the capture's, and no two
    lanes wait on each other.

    ``follow``: a step -> the one step reading its output (``to_reader_lanes``): run right after it where that can
    be (its other predecessors on the same lane and ready, which then go just before it), so that the two are
    adjacent and a pair does them in one pass (a gradient's add and its update). ``preds``: ``conflict_preds``
    of the ranges, when the caller has them.

    The simulation is event driven (a step becomes ready when its last predecessor finishes; each lane keeps its
    ready steps in heaps), so it costs the steps and their conflicts times a log, not a scan of every pending step
    per step started."""
    n = len(lane_of)
    if preds is None:
        preds = conflict_preds(ranges_of)
    succs = successors_of(preds)
    cost = [1.0 + sum(high - low for low, high, _ in ranges if low >= 0) / 1e3 for ranges in ranges_of]
    rank = list(cost)  # the longest chain of costs from each step to the end; successors come later
    # A step touching the runtime (a push, a pull, a notify) goes first among those a lane can start at once, with
    # what it waits for on its own lane: a pull can raise, and one that runs before the optimizer's updates keeps
    # them out of the call guard (lanes.py ``guarded``).
    first = [any(low < 0 for low, _, _ in ranges) for ranges in ranges_of]
    for index in range(n - 1, -1, -1):
        if first[index]:
            for p in preds[index]:
                first[p] = first[p] or lane_of[p] == lane_of[index]
    for index in range(n - 1, -1, -1):
        for p in preds[index]:
            rank[p] = max(rank[p], cost[p] + rank[index])
            # a step another lane waits on goes first too, as a pull does (the train step's identity, before its
            # counter there): behind the pull it kept that lane's counter, and so this lane's backward, waiting for
            # a whole backward of the other (boxing acts run beside their readers, ``to_reader_lanes``, so both
            # lanes' losses are ready at once and the pull's chain won; tests/replay/test_boxing_fused.py caught it)
            first[p] = first[p] or lane_of[p] != lane_of[index]
    finish: dict[int, float] = {}
    clock = [0.0] * (max(lane_of, default=0) + 1)
    waiting = [len(p) for p in preds]  # predecessors not finished yet
    # per lane, the ready steps: ``now`` those that could start at the lane's clock, keyed (not first, -rank,
    # index); ``later`` those whose predecessors finish after it, keyed (ready time, not first, -rank, index)
    now: list[list[tuple[bool, float, int]]] = [[] for _ in clock]
    later: list[list[tuple[float, bool, float, int]]] = [[] for _ in clock]

    def ready(i: int) -> None:
        at = max((finish[p] for p in preds[i]), default=0.0)
        heapq.heappush(later[lane_of[i]], (at, not first[i], -rank[i], i))

    for i in range(n):
        if not waiting[i]:
            ready(i)
    order: list[int] = []
    while len(order) < n:
        best: tuple[float, bool, float, int] | None = None  # (start, not first, -rank, index)
        for k in range(len(clock)):
            soon, ahead = now[k], later[k]
            while ahead and (ahead[0][3] in finish or ahead[0][0] <= clock[k]):
                entry = heapq.heappop(ahead)
                if entry[3] not in finish:
                    heapq.heappush(soon, entry[1:])
            while soon and soon[0][2] in finish:
                heapq.heappop(soon)
            key = (clock[k], *soon[0]) if soon else ahead[0] if ahead else None
            if key is not None and (best is None or key < best):
                best = key
        assert best is not None  # the capture order itself is a schedule: some step is always ready
        i = best[3]
        k = lane_of[i]
        chain = [i, *_chased((follow or {}).get(i), k, lane_of, preds, finish, {i})]
        for i in chain:
            start = max([clock[k], *(finish[p] for p in preds[i] if p in finish)])
            finish[i] = clock[k] = start + cost[i]
            order.append(i)
            for s in succs[i]:
                waiting[s] -= 1
                if not waiting[s] and s not in finish:
                    ready(s)
    return order


def _chased(j: int | None, lane: int, lane_of: list[int], preds: list[list[int]], finish: dict[int, float],
            done: set[int]) -> list[int]:
    """The steps to run next so that ``j`` follows (schedule_order's ``follow``): its predecessors not done yet, in
    capture order, and ``j``, when they all are on ``lane`` with their own predecessors done; else none."""
    if j is None or lane_of[j] != lane:
        return []
    missing = [p for p in preds[j] if p not in finish and p not in done]
    if any(lane_of[p] != lane or any(q not in finish and q not in done for q in preds[p]) for p in missing):
        return []
    return [*missing, j]


def to_reader_lanes(ranges_of: list[list[tuple[int, int, bool]]], lane_of: list[int], movable: list[bool],
                    succs: list[list[int]] | None = None) -> tuple[list[int], dict[int, int]]:
    """Each ``movable`` step (a boxing act) on the lane of the steps that read what it writes, where they are all
    on one lane; the others keep theirs. Also, for schedule_order, each moved step whose reader is one step: that
    reader (``follow``). Why: OneFlow's PickCpuThrdIdEvenly deals boxing tasks round-robin over
    the device threads, and the one gathered loss shifts the deal, so a device's reduce-scatter add and all-gather
    copy sit on the other device's thread. The Plan keeps its thread ids (the debugger shows them); a lane is an
    execution detail (lanes.py), and running the act where its output is read keeps the bytes in that core's
    cache and puts the add beside the update that reads it, which a pair (kernels/numba_cpu/pairs.py) then does
    in one pass. The readers: the later steps touching the bytes it writes, up to the first that writes them.
    Which lane runs a step never changes the results: the waits order every pair of steps that touch the same
    bytes, whichever lanes they are on. ``succs``: ``successors_of(conflict_preds(ranges_of))``, when the
    caller has them (a later step touching bytes a step writes conflicts with it: only those need a look)."""
    if succs is None:
        succs = successors_of(conflict_preds(ranges_of))
    lanes = list(lane_of)
    follow: dict[int, int] = {}
    for index in range(len(ranges_of) - 1, -1, -1):  # backwards: a reader that moves has moved already
        if not movable[index]:
            continue
        written = [(low, high) for low, high, writes in ranges_of[index] if writes and low >= 0]
        readers: list[int] = []
        for later in succs[index]:
            touched = [w for low, high, w in ranges_of[later] if any(low < b and a < high for a, b in written)]
            if touched:
                readers.append(later)
                if any(touched):
                    break
        if len({lanes[r] for r in readers}) == 1:
            lanes[index] = lanes[readers[0]]
            if len(readers) == 1:
                follow[index] = readers[0]
    return lanes, follow


def without_piece(ranges: list[tuple[int, int, bool]], ins: list[Any]) -> list[tuple[int, int, bool]]:
    """A gather holding its device's variable as a piece (compiler/gather_inplace.py) reads the piece and writes
    only the bytes around it: its written ranges leave the inputs lying inside them out, so it does not wait on
    the other device's gather reading that variable, nor that one on it."""
    inside = [byte_bounds(a) for a in ins if isinstance(a, np.ndarray) and a.nbytes]
    out = []
    for low, high, written in ranges:
        if written:
            for lo, hi in sorted(b for b in inside if low <= b[0] and b[1] <= high):
                if lo > low:
                    out.append((low, lo, True))
                low = hi
        if high > low:
            out.append((low, high, written))
    return out
