"""The order a multi-device schedule's lanes run their steps in (replay/lanes.py): a simulated run of the lanes.

Any topological order of the conflicting pairs of steps (two steps touching the same bytes, one writing) gives
the capture's results; which one decides how long a lane waits on another. This one is list scheduling over the
conflict graph with the bytes a step touches as its cost.
"""

from __future__ import annotations

import numpy as np


def conflicts(ranges: list[tuple[int, int, bool]], lows: list[int], highs: list[int],
               writes: list[bool]) -> np.ndarray:
    """Which of the ranges so far (lows, highs, writes) overlap one of ``ranges``, either side writing."""
    lo, hi, wr = np.array(lows), np.array(highs), np.array(writes)
    conflict = np.zeros(len(lows), bool)
    for low, high, written in ranges:
        conflict |= (lo < high) & (hi > low) & (wr | written)
    return conflict


def schedule_order(ranges_of: list[list[tuple[int, int, bool]]], lane_of: list[int]) -> list[int]:
    """The steps in the order of a simulated run of the lanes (list scheduling): each step costs the bytes it
    touches (a proxy for its time), and whenever a lane is free it starts, of its steps whose conflicting
    predecessors are all done, the one on the longest chain of costs to the end (what the other lanes will
    wait for longest), else waits for the earliest one to become ready. The order is the steps' start order.

    So each lane runs the work it can before it waits on another (a device computes its own gradients before
    the all-reduce needs the other's, whatever order the protocol happened to act in), and a small step another
    lane needs (the train step's counter, on the other device's thread) runs as soon as it can, not after a
    lane's whole backward. A step starts only after every conflicting predecessor, so this is a topological
    order of every conflicting pair: each keeps its capture order, the results stay the capture's, and no two
    lanes wait on each other."""
    n = len(lane_of)
    lows: list[int] = []
    highs: list[int] = []
    writes: list[bool] = []
    step_of: list[int] = []
    preds: list[list[int]] = []
    for ranges in ranges_of:
        before = np.asarray(step_of)[conflicts(ranges, lows, highs, writes)] if lows else np.zeros(0, np.int64)
        preds.append(sorted({int(p) for p in before}))
        for low, high, written in ranges:
            lows.append(low)
            highs.append(high)
            writes.append(written)
            step_of.append(len(preds) - 1)
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
    finish: dict[int, float] = {}
    clock = [0.0] * (max(lane_of, default=0) + 1)
    pending = [[i for i in range(n) if lane_of[i] == k] for k in range(len(clock))]
    order: list[int] = []
    while len(order) < n:
        best: tuple[float, bool, float, int, int] | None = None  # (start, not first, -rank, index, lane)
        for k, steps in enumerate(pending):
            for i in steps:
                if all(p in finish for p in preds[i]):
                    start = max([clock[k], *(finish[p] for p in preds[i])])
                    key = (max(start, clock[k]), not first[i], -rank[i], i, k)
                    if best is None or key < best:
                        best = key
        assert best is not None  # the capture order itself is a schedule: some step is always ready
        start, _, _, i, k = best
        finish[i] = clock[k] = start + cost[i]
        pending[k].remove(i)
        order.append(i)
    return order
