"""Settling: the protocol's bookkeeping of the replays so far, written when something is about to read it.

A replay runs a schedule's kernels and notifies and nothing else. What only the protocol itself can observe is
left for ``settle``: the actors' act counters, the registers' act ids, the ids the main job's actors wrote into
their registers, the rotation of the wait-ids source's registers (and of rotating registers, e.g. a
SliceBoxing's two), and the runtime's act count. Consecutive
replays of one schedule settle in one pass, so a training loop pays for the bookkeeping once, not per call.
``Runtime.observe()`` calls it (through the layer) before ``step()``, ``peek()`` and ``seq`` read the state.

tests/replay/test_replay_proof.py removes each state update below in turn and checks that the proof then fails: none is
dead, and the proof sees every one.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..runtime.regst import Regst
    from .layer import ReplayLayer


def settle(layer: ReplayLayer) -> None:
    """Write the bookkeeping of ``layer.pending`` ([schedule, times] runs, oldest first) into the runtime."""
    rt = layer.rt
    known_now = layer.current_state()
    wait = rt.wait_actor
    for schedule, times in layer.pending:
        delta = schedule.delta  # the Schedule IR's delta, bound to the runtime at capture (capture.bind_delta)
        wait_base = wait.act_id
        for actor, n in delta.actor_acts:
            actor.act_id += n * times
        for regst, producer, offset in delta.regst_offsets:  # the last replay's writes are what is left
            regst.act_id = producer.act_id + offset
        for array, value in delta.id_writes:
            array[0] = value
        if delta.wait_writes:
            settle_wait_ids(wait.writable_list[0], delta.wait_writes, wait_base,
                            (wait.act_id - wait_base) // times, times)
        for free, order in delta.rotations:  # a call that rotates registers: its replays alternate schedules
            free.clear()
            free.extend(order)
        for actor, in_arrays, out_arrays in schedule.bindings:
            actor.in_arrays = in_arrays
            actor.out_arrays = out_arrays
        rt._seq += delta.acts * times
    layer.pending.clear()
    rt.deferred = False
    if known_now is not None:  # the state the replays left is still known, under the new counters
        layer.known = (known_now, rt._seq, rt.launched)


def settle_wait_ids(free: deque[Regst], writes: list[tuple[int, int, int]], base: int, acts: int,
                    times: int) -> None:
    """The wait-ids source's registers after ``times`` replays: replay k took the free list's registers
    k * used + position (mod its length), from the front, and each went back to the end once read."""
    regsts = list(free)
    count, used = len(regsts), len(writes)
    for k in range(max(0, times - count // used - 1), times):  # earlier replays' registers were written again
        for position, offset, value in writes:
            regst = regsts[(k * used + position) % count]
            regst.first[0] = value
            regst.act_id = base + (k + 1) * acts + offset
    free.rotate(-used * times)
