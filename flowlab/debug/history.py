"""Time travel in the debugger: ``back(n)``, ``rewind(to=k)``, ``writer_of(blob)``, ``readers_of(blob)``.

Each ``step`` keeps an undo record of what the act overwrote (undo.py: the bytes of the registers it writes, the
protocol state of the actor and its neighbours as small records) plus the debugger's own state (breakpoint hit
counts, the recording's lifetimes, the call's pulled results). ``back`` undoes records newest first, so every
register, actor, buffer and variable is as an uninterrupted run had it after the earlier act, and stepping on
gives exactly what that run gives (the scheduler is deterministic). ``inject`` keeps the bytes it overwrites too,
so going back past an injection undoes it. The records kept are limited to ``history_limit`` acts (a ring: the
oldest are dropped); docs/time-travel.md has the design and the measured cost.
"""

from __future__ import annotations

import statistics
import sys
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import FlowlabError
from ..runtime import ActEvent, Actor, Runtime
from ..runtime.executor import Stepper
from .undo import ActUndo, UndoTaker

DEFAULT_HISTORY = 1000  # acts kept by default: the 30-layer train job keeps ~16 KB an act (docs/time-travel.md)


@dataclass(frozen=True)
class HistoryStats:
    """How much the kept history holds: ``acts`` undo records (of at most ``limit``), reaching back to act
    ``oldest``; ``nbytes`` in all (register copies and records; ``register_bytes`` of it the copies), per act
    ``median_bytes`` / ``max_bytes``."""

    acts: int
    limit: int
    oldest: int
    nbytes: int
    median_bytes: float
    max_bytes: int
    register_bytes: int

    def __str__(self) -> str:
        return (f"history: {self.acts} acts kept (limit {self.limit}), back to act {self.oldest}; "
                f"{self.nbytes:,} bytes ({self.register_bytes:,} of register copies), per act median "
                f"{self.median_bytes:,.0f} B, max {self.max_bytes:,} B")


class _Entry:
    """One undo step: an act (``undo`` set) or an injection (``array`` and its old bytes)."""

    __slots__ = ("acts", "undo", "debugger", "recorder", "array", "old")

    def __init__(self, acts: int, undo: ActUndo | None = None, debugger: tuple | None = None,
                 recorder: tuple | None = None, array: Any = None, old: np.ndarray | None = None) -> None:
        self.acts, self.undo, self.debugger, self.recorder, self.array, self.old = \
            acts, undo, debugger, recorder, array, old


class TimeTravel:
    """The debugger's history (a mixin of ``Debugger``, which sets the attributes annotated here)."""

    runtime: Runtime
    stepper: Stepper  # what steps ``runtime`` (Runtime.stepper())
    timeline_entries: list
    recorder: Any
    instances: list
    injections: list[tuple[int, str]]
    _pulled: list
    _breakpoints: list
    _resume_past: Actor | None
    _history_limit: int

    # -- keeping -----------------------------------------------------------------------------------
    def _reset_history(self) -> None:
        """A new run (restart): nothing to go back to. A runtime whose machines live in other processes (Ray)
        keeps none: its registers and actors are not here to copy."""
        self._entries: deque[_Entry] = deque()
        self._kept_acts = 0
        self._taker = None if self.runtime.remote else UndoTaker(self.runtime)

    @property
    def history_limit(self) -> int:
        """How many acts ``back`` can undo at most (the oldest records are dropped beyond it; 0 keeps none)."""
        return self._history_limit

    @history_limit.setter
    def history_limit(self, limit: int) -> None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise ValueError(f"history_limit must be an int >= 0 (acts kept for back/rewind); got {limit!r}")
        self._history_limit = limit
        if hasattr(self, "_entries"):  # not yet while the Debugger is being made
            self._trim()

    def _before_step(self, thread: Any) -> tuple | None:
        """The undo record of the act ``step(thread)`` is about to perform (None when none is kept)."""
        taker = self._taker
        if taker is None or self._history_limit == 0:
            return None
        state = taker.runtime_state()  # before peek: it may drop stale ready entries
        actor = self.stepper.peek(thread)
        if actor is None:
            return None
        own = ([(bp, bp.hits) for bp in self._breakpoints], self._resume_past,
               [(i.finished, i.pulled) for i in self.instances], list(self._pulled), len(self.injections))
        return taker.before(actor, state), own

    def _after_step(self, before: tuple | None, recorder_mark: tuple) -> None:
        if before is None:
            return
        undo, own = before
        self._entries.append(_Entry(self.acts - 1, undo, own, recorder_mark))
        self._kept_acts += 1
        self._trim()

    def _trim(self) -> None:
        entries = self._entries
        while self._kept_acts > self._history_limit:
            if entries.popleft().undo is not None:
                self._kept_acts -= 1

    def inject(self, name: str, value: Any) -> None:
        """Overwrite a live register's blob (live_state.py); ``back`` past this point puts the old bytes back."""
        _lbn, _regst, array = self._array(name)  # type: ignore[attr-defined]
        old = array.copy_to_host() if hasattr(array, "copy_to_host") else np.array(array, copy=True)
        super().inject(name, value)  # type: ignore[misc]
        if self._taker is not None and self._history_limit:
            self._entries.append(_Entry(self.acts, array=array, old=old))  # type: ignore[attr-defined]

    # -- going back --------------------------------------------------------------------------------
    def back(self, n: int = 1) -> ActEvent | None:
        """Undo the last ``n`` acts (and any ``inject`` after them): every register, actor, buffer and variable,
        the timeline, the recording and the breakpoints' hit counts are as they were before them. Returns the act
        now last (None at the start)."""
        acts = self.acts  # type: ignore[attr-defined]
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= acts:
            raise ValueError(f"back(n={n!r}): n must be an int in [0, {acts}] (the acts performed so far)")
        return self._go_back_to(acts - n, f"back({n})")

    def rewind(self, to: int | ActEvent = 0) -> ActEvent | None:
        """Go to the state right after act ``to`` (0 is the start, before any act; an ``ActEvent``, e.g.
        ``writer_of(...)``, means right after it). Returns the act now last."""
        acts = self.acts  # type: ignore[attr-defined]
        target = to.seq + 1 if isinstance(to, ActEvent) else to
        if not isinstance(target, int) or isinstance(target, bool) or not 0 <= target <= acts:
            raise ValueError(f"rewind(to={to!r}): the act must be in [0, {acts}] (0 is the start, {acts} the act "
                             f"performed last); stepping forward is step_n()")
        return self._go_back_to(target, f"rewind(to={target})")

    def _go_back_to(self, target: int, call: str) -> ActEvent | None:
        if self._taker is None:
            raise FlowlabError(f"{call}: going back is not possible on Ray machines: the other machines' registers "
                               "and actors live in their own processes and no undo record is kept of them; "
                               f"restart() and step_n({target}) reach the same state")
        acts = self.acts  # type: ignore[attr-defined]
        if acts - target > self._kept_acts:
            oldest = acts - self._kept_acts
            raise FlowlabError(f"{call}: act {target} is older than the {self._history_limit} acts kept (back to act "
                               f"{oldest}); raise history_limit (dbg.history_limit = {acts - target}) before "
                               f"stepping, or restart() and step_n({target})")
        entries, rt = self._entries, self.runtime
        # an act entry's ``acts`` is the count before it; an injection's the count it was made at: one made right
        # after act ``target`` is part of the state after act ``target``, one made later is undone
        while entries and entries[-1].acts >= target + (entries[-1].undo is None):
            entry = entries.pop()
            if entry.undo is None:  # an injection made after act entry.acts
                _put_back(entry.array, entry.old)
                self.injections.pop()
                continue
            self._kept_acts -= 1
            self._taker.undo(entry.undo)
            hits, resume_past, instances, pulled, injections = entry.debugger
            counts = {id(bp): count for bp, count in hits}
            for bp in self._breakpoints:  # one set after the act had no hit before it
                bp.hits = counts.get(id(bp), 0)
            self._resume_past = resume_past
            for instance, (finished, value) in zip(self.instances, instances):
                instance.finished, instance.pulled = finished, value
            self._pulled[:] = pulled
            del self.injections[injections:]
            del self.timeline_entries[entry.acts:]
            self.recorder.undo(entry.recorder)
        rt.observe()
        return self.timeline_entries[-1].event if self.timeline_entries else None

    @property
    def history(self) -> HistoryStats:
        """What the kept undo records hold (bytes of register copies and records, per act)."""
        sizes = [_entry_bytes(e) for e in self._entries if e.undo is not None]
        acts = self.acts  # type: ignore[attr-defined]
        return HistoryStats(len(sizes), self._history_limit, acts - len(sizes), sum(sizes),
                            statistics.median(sizes) if sizes else 0.0, max(sizes, default=0),
                            sum(e.undo.nbytes for e in self._entries if e.undo is not None))

    # -- who wrote, who read ---------------------------------------------------------------------------
    def writer_of(self, blob: str, parallel_id: int | None = None) -> ActEvent | None:
        """The act that last wrote the blob (named as ``dbg.blob`` accepts: lbn, job-qualified lbn or op name):
        the act that produced its register, or an op that updates it in place (an optimizer's update of a
        variable). None when no act of this run has written it (a variable holds the session's value)."""
        own, group = self._registers_of(blob, parallel_id)
        for entry in reversed(self.timeline_entries):
            if self._writes(entry.event, own, group):
                return entry.event
        return None

    def readers_of(self, blob: str, parallel_id: int | None = None) -> list[ActEvent]:
        """The acts that read the blob's current value: after its writer (``writer_of``; from the start when no
        act wrote it), up to now."""
        _own, group = self._registers_of(blob, parallel_id)
        writer = self.writer_of(blob, parallel_id)
        start = 0 if writer is None else writer.seq + 1
        return [e.event for e in self.timeline_entries[start:] if any(r in group and i == 0 for r, i in e.event.read)]

    def _registers_of(self, blob: str, parallel_id: int | None) -> tuple[int, frozenset[int]]:
        """The blob's register desc, and every desc over the same bytes (registers in place of the same variable:
        compiler/inplace.py). The debugger shows register 0 of a desc, so register 0 is the one followed."""
        _lbn, regst_id, _array = self._array(blob, parallel_id)  # type: ignore[attr-defined]
        descs = self.plan.regst_descs  # type: ignore[attr-defined]

        def root(rid: int) -> int:
            while descs[rid].inplace_consumed_regst_desc_id >= 0:
                rid = descs[rid].inplace_consumed_regst_desc_id
            return rid

        mine = root(regst_id)
        return regst_id, frozenset(rid for rid in descs if rid == regst_id or root(rid) == mine)

    def _writes(self, event: ActEvent, own: int, group: frozenset[int]) -> bool:
        """Whether the act wrote the bytes: produced the register (another register over the same bytes counts
        when its act ran a kernel: a variable's ref register is only handed on), or updated it in place."""
        actor = self.runtime.actors.get(event.actor_id)
        for rid, index in event.written:
            if index == 0 and (rid == own or (rid in group and (actor is None or actor.kernel is not None))):
                return True
        if actor is None or actor.kernel is None:
            return False
        ops = actor.task.exec_sequence
        in_place = bool(ops) and not ops[0].output_lbns  # an op with no outputs writes its inputs (undo.py)
        return in_place and any(rid in group and index == 0 for rid, index in event.read)


def _put_back(array: Any, old: np.ndarray) -> None:
    if hasattr(array, "copy_to_device"):
        array.copy_to_device(old)
    else:
        array[...] = old


def _entry_bytes(entry: _Entry) -> int:
    """The bytes one act's records hold: its register copies, and the records themselves (their containers)."""
    undo = entry.undo
    assert undo is not None
    total = undo.nbytes + sys.getsizeof(undo.arrays) + sys.getsizeof(undo.regsts) + sys.getsizeof(undo.actors)
    total += sum(sys.getsizeof(r) for r in undo.regsts)
    for record in undo.actors:
        total += sys.getsizeof(record) + sum(sys.getsizeof(x) for x in (*record[1], *record[2]))
    state = undo.runtime
    total += sys.getsizeof(state) + sum(sys.getsizeof(x) for x in state[1:4])
    total += sum(sys.getsizeof(items) for _, items in state[3])
    return total
