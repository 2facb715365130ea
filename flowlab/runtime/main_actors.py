"""The main job's actors: WaitAndSendIds, ReentrantLock, Case, Esac (their act differs from NormalForward)."""

from __future__ import annotations

from collections import deque

from .actor import Actor


def _section_id_of(actor: Actor, regst_id: int) -> int:
    """The section id carried by the front register of a consumed slot (an i32[1] blob)."""
    return int(actor.readable[regst_id][0].first[0])


class WaitAndSendIdsActor(Actor):
    """The only source: takes a job id from the wait buffer and emits that job's critical-section ids."""

    __slots__ = ("buffer", "id_list", "pending", "out_regst_id")

    def setup(self, buffer: deque[int], id_list: tuple[tuple[int, ...], ...]) -> None:
        self.buffer, self.id_list, self.pending = buffer, id_list, deque()
        (self.out_regst_id,) = self.writable

    def is_ready(self) -> bool:
        return self.state == "normal" and bool(self.pending or self.buffer) and all(self.writable_list)

    def never_ready_again(self) -> bool:
        return self.rt.closed and not self.pending and not self.buffer

    def blocked_reason(self) -> str | None:
        if self.state == "normal" and not (self.pending or self.buffer):
            return "waiting for a job to be launched"
        return super().blocked_reason()

    def act(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        self.act_id += 1
        if not self.pending:
            self.pending.extend(self.id_list[self.buffer.popleft()])
        return [], [self.produce(self.out_regst_id, self.pending.popleft())]

    act_silent = act  # its act builds its lists anyway (few acts a call)


class ReentrantLockActor(Actor):
    """Grants critical sections: FIFO among intersecting ones, overlapping among disjoint ones."""

    __slots__ = ("start_id", "end_id", "out_regst_id", "conflicts", "queue", "held")

    def setup(self, intersecting: tuple[tuple[int, ...], ...]) -> None:
        self.start_id = self.task.consumed_regst_desc_id["start"][0]
        self.end_id = self.task.consumed_regst_desc_id["end"][0]
        (self.out_regst_id,) = self.writable
        # A section conflicts with itself and with every section it intersects.
        self.conflicts = [frozenset((i, *others)) for i, others in enumerate(intersecting)]
        self.queue: deque[int] = deque()  # requested section ids, oldest first
        self.held: set[int] = set()

    def _grantable(self) -> int | None:
        """Position of the oldest request that conflicts with nothing held and with no older request."""
        queue = self.queue
        if queue and not self.conflicts[queue[0]] & self.held:  # the oldest goes first: the common case, no set
            return 0
        older: set[int] = set()
        for pos, section in enumerate(self.queue):
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
        readable = self.readable
        if readable[self.end_id] or readable[self.start_id]:
            return True
        return bool(self.queue) and bool(self.writable[self.out_regst_id]) and self._grantable() is not None

    def never_ready_again(self) -> bool:
        return (self.start_id in self.eord_received and not self.readable[self.start_id]
                and not self.queue and not self.held)

    def blocked_reason(self) -> str | None:
        if self.state == "normal" and self.queue and not self.is_ready():
            return f"sections {list(self.queue)} wait for held sections {sorted(self.held)}"
        if self.state == "normal" and not self.is_ready():
            return "waiting for a critical-section request"
        return None if self.state == "normal" else self.state

    def act(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        self.act_id += 1
        read: list[tuple[int, int]] = []
        end_id, start_id = self.end_id, self.start_id
        ends, starts = self.readable[end_id], self.readable[start_id]
        while ends:
            self.held.discard(int(ends[0].first[0]))
            read.append(self.give_back(end_id))
        while starts:
            self.queue.append(int(starts[0].first[0]))
            read.append(self.give_back(start_id))
        written = []
        pos = self._grantable() if self.queue and self.writable[self.out_regst_id] else None
        if pos is not None:
            section = self.queue[pos]
            del self.queue[pos]
            self.held.add(section)
            written.append(self.produce(self.out_regst_id, section))
        return read, written

    act_silent = act  # its act builds its lists anyway (few acts a call)

class CaseActor(Actor):
    """Routes a section id to that section's branch register (one register per branch)."""

    __slots__ = ("in_id", "branch_regst_ids")

    def setup(self) -> None:
        (self.in_id,) = self.readable
        by_name = self.task.produced_regst_desc
        self.branch_regst_ids = [by_name[name].regst_desc_id for name in sorted(by_name, key=_branch_index)]

    def is_ready(self) -> bool:
        if self.state != "normal" or not self.readable[self.in_id]:
            return False
        return bool(self.writable[self.branch_regst_ids[_section_id_of(self, self.in_id)]])

    def act(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        self.act_id += 1
        section = _section_id_of(self, self.in_id)
        branch = self.branch_regst_ids[section]
        written = [self.produce(branch, section)]
        return [self.give_back(self.in_id)], written

    act_silent = act  # its act builds its lists anyway (few acts a call)


def _branch_index(name: str) -> int:
    return int(name.rpartition("_")[2]) if "_" in name else 0


class EsacActor(Actor):
    """Passes on whichever branch finished: any one input makes it ready; it emits that section's id."""

    __slots__ = ("in_ids", "out_regst_id")

    def setup(self) -> None:
        self.in_ids = list(self.task.consumed_regst_desc_id["in"])  # in critical-section order
        (self.out_regst_id,) = self.writable

    def is_ready(self) -> bool:
        return self.state == "normal" and any(self.readable_list) and all(self.writable_list)

    def never_ready_again(self) -> bool:
        return len(self.eord_received) == len(self.in_ids) and not any(self.readable_list)

    def act(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        self.act_id += 1
        section = next(i for i, regst_id in enumerate(self.in_ids) if self.readable[regst_id])
        read = [self.give_back(self.in_ids[section])]
        return read, [self.produce(self.out_regst_id, section)]

    act_silent = act  # its act builds its lists anyway (few acts a call)
