"""The main job's actors: WaitAndSendIds, ReentrantLock, Case, Esac (their act differs from NormalForward)."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from .actor import Actor

if TYPE_CHECKING:
    from .actor import Moved
    from .events import EventSink


class WaitAndSendIdsActor(Actor):
    """The only source: takes a job id from the wait buffer and emits that job's critical-section ids."""

    __slots__ = ("buffer", "id_list", "pending", "out_regst_id", "out")

    def setup(self, buffer: deque[int], id_list: tuple[tuple[int, ...], ...]) -> None:
        self.buffer, self.id_list = buffer, id_list
        self.pending: deque[int] = deque()
        (self.out_regst_id,) = self.writable
        self.out = self.out_by_id[self.out_regst_id]

    def is_ready(self) -> bool:
        return self.state == "normal" and bool(self.pending or self.buffer) and all(self.writable_list)

    def never_ready_again(self) -> bool:
        return self.rt.closed and not self.pending and not self.buffer

    def blocked_reason(self) -> str | None:
        if self.state == "normal" and not (self.pending or self.buffer):
            return "waiting for a job to be launched"
        return super().blocked_reason()

    def act(self, sink: EventSink | None = None) -> Moved:  # its lists, always (few acts a call)
        self.act_id += 1
        pending = self.pending
        if not pending:
            pending.extend(self.id_list[self.buffer.popleft()])
        return [], [self.produce(self.out, pending.popleft())]


class ReentrantLockActor(Actor):
    """Grants critical sections: FIFO among intersecting ones, overlapping among disjoint ones."""

    __slots__ = ("start", "end", "out", "starts", "ends", "free", "conflicts", "queue", "held", "grant")

    def setup(self, intersecting: tuple[tuple[int, ...], ...]) -> None:
        start_id = self.task.consumed_regst_desc_id["start"][0]
        end_id = self.task.consumed_regst_desc_id["end"][0]
        (out_regst_id,) = self.writable
        self.start, self.end, self.out = self.in_by_id[start_id], self.in_by_id[end_id], self.out_by_id[out_regst_id]
        self.starts, self.ends, self.free = self.readable[start_id], self.readable[end_id], self.writable[out_regst_id]
        # A section conflicts with itself and with every section it intersects.
        self.conflicts = [frozenset((i, *others)) for i, others in enumerate(intersecting)]
        self.queue: deque[int] = deque()  # requested section ids, oldest first
        self.held: set[int] = set()
        # _grantable() of the current queue and held sections. Only this actor's act changes either, so the act
        # works it out once at its end and is_ready(), asked several times between two acts, only reads it.
        self.grant: int | None = None

    def _grantable(self) -> int | None:
        """Position of the oldest request that conflicts with nothing held and with no older request."""
        queue = self.queue
        if not queue:
            return None
        if not self.conflicts[queue[0]] & self.held:  # the oldest goes first: the common case, no set
            return 0
        older: set[int] = set()
        for pos, section in enumerate(queue):
            conflicts = self.conflicts[section]
            if not (conflicts & self.held or conflicts & older):
                return pos
            older.add(section)
            if len(older) == len(self.conflicts):  # every section already waits: nothing later can go first
                return None
        return None

    def is_ready(self) -> bool:
        if self.state != "normal":
            return False
        return bool(self.ends) or bool(self.starts) or (self.grant is not None and bool(self.free))

    def ready_on_arrival(self, regst_id: int) -> list[Any] | None:
        """A request or a release arriving makes the lock ready whenever it is normal (is_ready's first two)."""
        return [self.alive]

    def never_ready_again(self) -> bool:
        return (self.start[0] in self.eord_received and not self.starts
                and not self.queue and not self.held)

    def blocked_reason(self) -> str | None:
        if self.state == "normal" and self.queue and not self.is_ready():
            return f"sections {list(self.queue)} wait for held sections {sorted(self.held)}"
        if self.state == "normal" and not self.is_ready():
            return "waiting for a critical-section request"
        return None if self.state == "normal" else self.state

    def act(self, sink: EventSink | None = None) -> Moved:  # its lists, always (few acts a call)
        self.act_id += 1
        read: list[tuple[int, int]] = []
        ends, starts, queue, held = self.ends, self.starts, self.queue, self.held
        while ends:
            held.discard(ends[0].ids[0])
            read.append(self.give_back(self.end))
        while starts:
            queue.append(starts[0].ids[0])
            read.append(self.give_back(self.start))
        written = []
        pos = self._grantable() if queue else None  # (an empty queue, the usual case after a grant: no call)
        if pos is not None and self.free:
            section = queue[pos]
            del queue[pos]
            held.add(section)
            written.append(self.produce(self.out, section))
            pos = self._grantable() if queue else None
        self.grant = pos
        return read, written


class CaseActor(Actor):
    """Routes a section id to that section's branch register (one register per branch)."""

    __slots__ = ("in_id", "branch_regst_ids", "inbox", "source", "branches", "branch_free")

    def setup(self) -> None:
        (self.in_id,) = self.readable
        self.inbox, self.source = self.readable[self.in_id], self.in_by_id[self.in_id]
        by_name = self.task.produced_regst_desc
        self.branch_regst_ids = [by_name[name].regst_desc_id for name in sorted(by_name, key=_branch_index)]
        self.branches = [self.out_by_id[i] for i in self.branch_regst_ids]
        self.branch_free = [self.writable[i] for i in self.branch_regst_ids]

    def is_ready(self) -> bool:
        inbox = self.inbox
        return bool(inbox) and self.state == "normal" and bool(self.branch_free[inbox[0].ids[0]])

    def act(self, sink: EventSink | None = None) -> Moved:  # its lists, always (few acts a call)
        self.act_id += 1
        section = self.inbox[0].ids[0]
        written = [self.produce(self.branches[section], section)]
        return [self.give_back(self.source)], written


def _branch_index(name: str) -> int:
    return int(name.rpartition("_")[2]) if "_" in name else 0


class EsacActor(Actor):
    """Passes on whichever branch finished: any one input makes it ready; it emits that section's id."""

    __slots__ = ("in_ids", "out_regst_id", "out", "branches")

    def setup(self) -> None:
        self.in_ids = list(self.task.consumed_regst_desc_id["in"])  # in critical-section order
        (self.out_regst_id,) = self.writable
        self.out = self.out_by_id[self.out_regst_id]
        self.branches = [(section, self.readable[i], self.in_by_id[i]) for section, i in enumerate(self.in_ids)]

    def is_ready(self) -> bool:
        return self.state == "normal" and any(self.readable_list) and all(self.writable_list)

    def ready_on_arrival(self, regst_id: int) -> list[Any] | None:
        """With a branch register just arrived, any(readable) holds: ready iff its output is free and it is normal."""
        return [*self.writable_list, self.alive]

    def never_ready_again(self) -> bool:
        return len(self.eord_received) == len(self.in_ids) and not any(self.readable_list)

    def act(self, sink: EventSink | None = None) -> Moved:  # its lists, always (few acts a call)
        self.act_id += 1
        for section, inbox, edge in self.branches:
            if inbox:  # the first branch holding a register (it acts only when ready: one does)
                read = [self.give_back(edge)]
                return read, [self.produce(self.out, section)]
        raise AssertionError(f"{self.name} acted with no branch register")

