"""The debugger's view of the live run, between acts: the actor table, blobs found by name (lbn, job-qualified lbn
or op name, on any device), their statistics and values, and ``inject``. ``Debugger`` (debugger.py) inherits it;
stepping and breakpoints stay there.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..ir import Plan
from ..runtime import Actor, Runtime
from ..runtime.dynamic import pieces_of
from ..runtime.executor import Stepper
from ..runtime.gpu import on_device
from ..runtime.variables import variable_pieces
from .inspect import BlobStats, blob_stats


@dataclass(frozen=True)
class ActorRow:
    name: str  # "job/op"
    task_type: str
    job: str
    state: str  # ready | blocked | done | ...
    acts: int
    reason: str | None
    occupancy: dict[int, tuple[int, int]]  # produced regst id -> (registers in use, register_num)


class LiveState:
    """The live run's state as the debugger shows it. Reads ``runtime`` and ``plan``, which the Debugger sets, and
    appends to its ``injections``."""

    runtime: Runtime
    stepper: Stepper  # what steps ``runtime`` (Runtime.stepper())
    plan: Plan
    injections: list[tuple[int, str]]
    finished: bool  # a Debugger property
    acts: int  # a Debugger property

    # -- looking at state --------------------------------------------------------------------------
    def qualified(self, actor: Actor) -> str:
        return f"{self.plan.job_names[actor.task.job_id]}/{actor.name}"

    def actors(self, full: bool = False) -> list[ActorRow]:
        """One row per actor, the next one marked ``  <- next``; ``full`` builds every row anew (see actor_rows)."""
        nxt = None if self.finished else self.stepper.peek()
        return [replace(row, name=row.name + "  <- next") if actor is nxt else row
                for actor, row in zip(self.runtime.actors.values(), self.actor_rows(full))]

    def actor_rows(self, full: bool = False) -> list[ActorRow]:
        """One row per actor in the runtime's order, unmarked. A row is built again only when its actor's protocol
        state moved since the last call (an act, a register arriving or coming back, a state change: what
        ``_fingerprint`` reads), so a step of the 754-actor job rebuilds a few rows, not all of them. ``full`` (and a
        new runtime: restart) builds every row; the result is the same either way
        (tests/debug/test_debugger_rows.py)."""
        cache: _RowCache | None = getattr(self, "_row_cache", None)
        if full or cache is None or cache.runtime is not self.runtime:
            cache = self._row_cache = _RowCache(self.runtime)
        return cache.rows(self._row)

    def _row(self, actor: Actor) -> ActorRow:
        reason = actor.blocked_reason()
        state = actor.state if actor.state != "normal" else ("ready" if reason is None else "blocked")
        regsts = self.runtime.regsts
        occupancy = {rid: (len(regsts[rid]) - len(q), len(regsts[rid])) for rid, q in actor.writable.items()}
        return ActorRow(self.qualified(actor), actor.task.task_type, self.plan.job_names[actor.task.job_id], state,
                        actor.act_id, reason, occupancy)

    def _all_lbns(self) -> dict[str, tuple[int, np.ndarray]]:
        out = {}
        for regst_id, regsts in self.runtime.regsts.items():
            for lbn, array in regsts[0].blobs.items():
                out.setdefault(lbn, (regst_id, array))
        return out

    def _array(self, name: str, parallel_id: int | None = None) -> tuple[str, int, np.ndarray]:
        """(lbn, register desc id, live array) by lbn ("op/y_0"), job-qualified lbn ("job/op/y_0"), or op name
        (its first output); on several devices, device ``parallel_id``'s piece (the first when None)."""
        lbn, regst, array = self._find(name)
        if not parallel_id:
            return lbn, regst, array
        producer = self.runtime.actors[self.plan.regst_descs[regst].producer_task_id].task
        for actor in self.runtime.actors.values():
            task = actor.task
            if task.job_id == producer.job_id and task.parallel_id == parallel_id and not task.is_boxing \
                    and task.exec_sequence and task.exec_sequence[0].name == producer.exec_sequence[0].name:
                regst = task.produced_regst_desc["out"].regst_desc_id
                return lbn, regst, self.runtime.regsts[regst][0].blobs[lbn]
        raise KeyError(f"blob {name!r} (op {producer.exec_sequence[0].name!r}) has no piece on parallel_id "
                       f"{parallel_id}; its op runs on {producer.parallel_num} device(s) "
                       f"({producer.exec_sequence[0].parallel_conf})")

    def _find(self, name: str) -> tuple[str, int, np.ndarray]:
        lbns = self._all_lbns()
        if name in lbns:
            return name, *lbns[name]
        for actor in self.runtime.actors.values():
            op = actor.task.exec_sequence[0]
            if not op.output_lbns:
                continue
            job = self.plan.job_names[actor.task.job_id]
            lbn = op.output_lbns[0] if name in (actor.name, self.qualified(actor)) else \
                next((lbn for lbn in op.output_lbns if name == f"{job}/{lbn}"), None)
            if lbn is not None:
                regst = actor.task.produced_regst_desc["out"].regst_desc_id
                return lbn, regst, self.runtime.regsts[regst][0].blobs[lbn]
        close = difflib.get_close_matches(name, list(lbns), n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise KeyError(f"no blob {name!r}; {hint}give an lbn (op/out_0, op/y_0 or op/out by op type), a "
                       f"job-qualified lbn or an op name; blobs are e.g. {', '.join(sorted(lbns)[:10])}")

    def written(self, regst_id: int, lbn: str) -> bool:
        """Whether this run has written the blob yet. Variables hold the session's values from the start; an
        interface blob shared by two jobs (same lbn, same bytes) counts as written once either job wrote it."""
        desc = self.plan.regst_descs[regst_id]
        producer = self.runtime.actors[desc.producer_task_id].task.exec_sequence[0]
        if producer.op_type == "variable" or any(r.act_id >= 0 for r in self.runtime.regsts[regst_id]):
            return True
        if desc.mem_block_id < 0:
            return False
        for other_id, regsts in self.runtime.regsts.items():
            other = regsts[0].desc
            if other_id != regst_id and lbn in other.lbi2blob_desc and other.mem_block_id == desc.mem_block_id \
                    and other.mem_block_offset == desc.mem_block_offset and any(r.act_id >= 0 for r in regsts):
                return True
        return False

    def blob(self, name: str, parallel_id: int | None = None) -> BlobStats:
        """The blob named ``name`` of the live run: statistics (of its finite values; NaN/Inf counted), a preview
        and a histogram, taken now. ``np.asarray(dbg.blob(name))`` is the register's live array (a view: acts
        change it; for a register in GPU memory a host copy taken now, ``.on_device``), ``dbg.value(name)`` a copy.
        A register no act has written yet says so (``.written``). On several devices ``parallel_id=k`` is device
        k's piece (default: the first)."""
        lbn, regst_id, array = self._array(name, parallel_id)
        static = self.plan.regst_descs[regst_id].lbi2blob_desc[lbn]
        if not static.is_dynamic:
            return blob_stats(lbn, array, written=self.written(regst_id, lbn), regst=regst_id)
        # a dynamic blob: the statistics of its current piece(s), the header's shape beside the static one
        header = next((r.header.get(lbn) for r in self.runtime.regsts[regst_id] if r.blobs.get(lbn) is array), None)
        current = pieces_of(array, header)
        stats = blob_stats(lbn, current[0] if len(current) == 1 else array, written=self.written(regst_id, lbn),
                           regst=regst_id)
        return replace(stats, static_shape=static.shape)

    def value(self, name: str, parallel_id: int | None = None) -> np.ndarray:
        """A copy of the blob's current values (from the GPU for a register in device memory). A variable's is its
        logical value (a split variable's pieces assembled); ``parallel_id=k`` gives device k's piece."""
        lbn, _regst, array = self._array(name, parallel_id)
        if parallel_id is None:
            pieces = variable_pieces(self.runtime).get(lbn.rpartition("/")[0])
            if pieces is not None:  # the variable op's own output
                return pieces.logical()
        if self.plan.regst_descs[_regst].lbi2blob_desc[lbn].is_dynamic:  # its current piece(s): what acts read
            header = next((r.header.get(lbn) for r in self.runtime.regsts[_regst] if r.blobs.get(lbn) is array), None)
            current = pieces_of(array, header)
            if len(current) == 1:
                return current[0].copy()
        return array.copy_to_host() if on_device(array) else array.copy()

    def inject(self, name: str, value: Any) -> None:
        """Overwrite a live register's blob; acts after this read the injected values."""
        lbn, _regst, array = self._array(name)
        new = np.asarray(value)
        if new.shape != array.shape:
            raise ValueError(f"inject({name!r}): the blob is {array.dtype}{list(array.shape)}; got shape {new.shape}")
        _assign(array, new.astype(array.dtype, copy=False))
        self.injections.append((self.acts, lbn))


class _RowCache:
    """Each actor's last row and what it was built from. A plain ``Actor``'s row is a function of its state, its act
    count and how many registers each of its slots holds (blocked_reason and occupancy read nothing else; names and
    producers are fixed), so equal fingerprints mean an equal row. The main job's actors (their own blocked_reason:
    a wait buffer, a lock's queue) and actors fed from another machine (a stand-in producer whose name says what is
    in flight) read more than that: theirs are built every time (a handful of rows)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.actors = list(runtime.actors.values())
        self.volatile = [type(a) is not Actor or any(not isinstance(p, Actor) for p in a.producer_of.values())
                         for a in self.actors]
        self.prints: list[tuple | None] = [None] * len(self.actors)
        self.cached: list[ActorRow | None] = [None] * len(self.actors)

    def rows(self, build: Any) -> list[ActorRow]:
        if len(self.actors) != len(self.runtime.actors):  # actors added since (none in flowlab today): start over
            self.__init__(self.runtime)  # type: ignore[misc]
        prints, cached = self.prints, self.cached
        for i, (actor, volatile) in enumerate(zip(self.actors, self.volatile)):
            fp = None if volatile else _fingerprint(actor)
            if fp is None or fp != prints[i]:
                prints[i], cached[i] = fp, build(actor)
        return list(cached)  # type: ignore[arg-type]


def _fingerprint(actor: Actor) -> tuple:
    # slots: every consumed slot, every produced slot and the "alive" token, fixed at wiring (actor.py)
    return actor.state, actor.act_id, *map(len, actor.slots)


def _assign(array: Any, value: Any) -> None:
    """``array[...] = value`` for host registers and GPU ones (a copy to the device)."""
    if on_device(array) or on_device(value):
        array.copy_to_device(value if on_device(value) else np.ascontiguousarray(value)) if on_device(array) \
            else np.copyto(array, value.copy_to_host())
    else:
        array[...] = value
