"""What a debugged run did, act by act, and what its memory held: the ``acts`` and ``memory`` parts of a run payload
(payload.md: ``Act``, ``Memory``; ids ``t:<task_id>``, ``r:<regst_desc_id>``, ``b:<mem_block_id>``).

A register's lifetime starts at the act that writes it and ends at the last act that reads it before it is written
again (a register written on every call of a job has one lifetime per write). Variables hold the session's values
from before the run, so their registers are live from act 0 (once for all the jobs' registers over a variable's
bytes). Statistics of written blobs are taken right after the act, because a reused memory block overwrites them
later.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..ir import Plan
from ..runtime import ActEvent, Runtime
from .inspect import blob_stats


@dataclass
class Lifetime:
    regst: int  # register desc id
    index: int  # which of its register_num registers
    block: int
    offset: int  # bytes into the block
    size: int
    first_act: int
    last_act: int
    lbns: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"regst": f"r:{self.regst}", "register": self.index, "block": f"b:{self.block}",
                "offset": self.offset, "size": self.size, "first_act": self.first_act, "last_act": self.last_act,
                "lbns": list(self.lbns)}


@dataclass
class Memory:
    """Memory blocks and register lifetimes over the acts recorded so far."""

    blocks: list[dict[str, Any]]  # {"id": "b:0", "size": bytes, "mem_case": "host", "reuse": bool}
    lifetimes: list[Lifetime]
    acts: int

    def to_dict(self) -> dict[str, Any]:
        return {"blocks": [dict(b) for b in self.blocks], "lifetimes": [lt.to_dict() for lt in self.lifetimes]}

    def occupancy(self, act: int) -> dict[str, int]:
        """Bytes of each block held by live registers at act ``act`` (block id -> bytes)."""
        used = {b["id"]: 0 for b in self.blocks}
        for lt in self.lifetimes:
            if lt.first_act <= act <= lt.last_act:
                used[f"b:{lt.block}"] += lt.size
        return used

    def peak(self) -> dict[str, int]:
        """The most bytes of each block live at one act (0 for a block no recorded act used): one sweep over the
        lifetimes' starts and ends."""
        events: dict[str, list[tuple[int, int]]] = {b["id"]: [] for b in self.blocks}
        for lt in self.lifetimes:
            events[f"b:{lt.block}"] += [(lt.first_act, lt.size), (lt.last_act + 1, -lt.size)]
        peak = {}
        for block, changes in events.items():
            live = best = 0
            for _act, delta in sorted(changes, key=lambda e: (e[0], e[1])):  # ends before starts at one act
                live += delta
                best = max(best, live)
            peak[block] = best
        return peak

    def __str__(self) -> str:
        peak = self.peak()
        lines = [f"memory after {self.acts} acts: {len(self.blocks)} blocks, {len(self.lifetimes)} register lifetimes",
                 f"{'block':<8}{'mem_case':<10}{'size B':>10}{'peak live B':>13}  reuse"]
        by_block: dict[int, list[Lifetime]] = {}
        for lt in self.lifetimes:
            by_block.setdefault(lt.block, []).append(lt)
        for b in self.blocks:
            lines.append(f"{b['id']:<8}{b['mem_case']:<10}{b['size']:>10,}{peak[b['id']]:>13,}  "
                         f"{'yes' if b['reuse'] else 'no'}")
            block_id = int(b["id"][2:])
            for lt in sorted(by_block.get(block_id, []), key=lambda x: (x.first_act, x.offset)):
                lines.append(f"    r:{lt.regst}[{lt.index}] +{lt.offset} {lt.size:,} B  "
                             f"acts {lt.first_act}..{lt.last_act}  {', '.join(lt.lbns)}")
        return "\n".join(lines)

    def chart(self, width: int = 60, blocks: list[str] | None = None) -> str:
        """Register lifetimes as text bars over the acts (one row per lifetime, grouped by block): the memory view's
        text fallback. ``blocks``: only these block ids ("b:2")."""
        acts = max(self.acts, 1)
        scale = min(1.0, width / acts)
        lines = [f"{'register':<12}{'block':<12}acts 0..{acts - 1}" + (f" (1 column = {1 / scale:.3g} acts)"
                                                                         if scale < 1 else "")]
        for lt in sorted(self.lifetimes, key=lambda x: (x.block, x.offset, x.first_act)):
            if blocks is not None and f"b:{lt.block}" not in blocks:
                continue
            start, end = int(lt.first_act * scale), int(lt.last_act * scale)
            bar = (" " * start + "#" * (end - start + 1)).ljust(int((acts - 1) * scale) + 1)
            name, place = f"r:{lt.regst}[{lt.index}]", f"b:{lt.block}+{lt.offset}"
            lines.append(f"{name:<12}{place:<12}|{bar}| {', '.join(lt.lbns)}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


@dataclass(eq=False)
class Recording(Mapping[str, Any]):
    """A debugged run: per act what acted, read and wrote (with statistics of what it wrote), and its memory.
    As a mapping it is the run payload's two parts, ``{"acts": [...], "memory": {...}}``, so it can be handed to
    ``flowlab.viz.payload.run_payload(plan, job_set, recording)`` as it is."""

    title: str
    acts: list[dict[str, Any]]
    memory: Memory
    stats: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def to_payload_parts(self) -> dict[str, Any]:
        """``{"acts": [...], "memory": {...}}`` for ``flowlab.viz.payload.run_payload``."""
        return {"acts": [dict(a) for a in self.acts], "memory": self.memory.to_dict()}

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, **self.to_payload_parts()}

    def __getitem__(self, key: str) -> Any:
        if key not in ("acts", "memory"):
            raise KeyError(f"a Recording's parts are 'acts' and 'memory'; got {key!r}")
        return self.to_payload_parts()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(("acts", "memory"))

    def __len__(self) -> int:
        return 2

    def __str__(self) -> str:
        lines = [f"recording of {self.title}: {len(self.acts)} acts"]
        for act in self.acts:
            writes = " ".join(act["writes"])
            bad = [f"{r} nan {s['nan']} inf {s['inf']}" for r, s in act["blobs"].items() if s["nan"] or s["inf"]]
            lines.append(f"  #{act['index']} {act['job']}/{act['actor']} read[{' '.join(act['reads'])}] "
                         f"wrote[{writes}]" + (f"  ({'; '.join(bad)})" if bad else ""))
        return "\n".join(lines)


class Recorder:
    """Fed every act of a Debugger's run (``record``); hands out the Recording and Memory so far."""

    def __init__(self, plan: Plan, runtime: Runtime, qualified: Callable[[Any], str]) -> None:
        self.plan, self.runtime = plan, runtime
        self.acts: list[dict[str, Any]] = []
        self.lifetimes: list[Lifetime] = []
        self._open: dict[tuple[int, int], Lifetime] = {}  # (regst, index) -> its current lifetime
        self._rest: dict[tuple[int, int], Lifetime] = {}  # a gathered weight's part after its variable's rows
        self._held = {r.regst_desc_id: r.piece_inplace_consumed_regst_desc_id for r in plan.regst_descs.values()
                      if r.piece_inplace_consumed_regst_desc_id >= 0}  # a gathered weight -> the variable it holds
        # a register in place of another (a variable's ref: compiler/inplace.py) is that one's bytes, never an
        # allocation of its own: its acts extend the variable's lifetime, which also lists its blob
        descs = plan.regst_descs
        self._inplace: dict[int, int] = {}
        for regst_id, desc in descs.items():
            root = desc
            while root.inplace_consumed_regst_desc_id >= 0:
                root = descs[root.inplace_consumed_regst_desc_id]
            if root is not desc:
                self._inplace[regst_id] = root.regst_desc_id
        # A variable has a register in every job that uses it (train, model init/load/save), all over the same
        # bytes (one shared block and offset): one lifetime, which the others' acts extend (as an in-place one's).
        variables: dict[tuple[int, int, int], int] = {}
        for regst_id, regsts in sorted(runtime.regsts.items()):
            desc = regsts[0].desc
            if plan.task(desc.producer_task_id).exec_sequence[0].op_type != "variable":
                continue
            where = (desc.mem_block_id, desc.mem_block_offset, desc.regst_size)
            if desc.mem_block_id >= 0 and where in variables and regst_id not in self._inplace:
                self._inplace[regst_id] = variables[where]
                continue
            variables.setdefault(where, regst_id)
            for regst in regsts:
                self._start(regst_id, regst.index, 0)

    def _start(self, regst_id: int, index: int, act: int) -> None:
        desc = self.runtime.regsts[regst_id][index].desc
        if desc.mem_block_id < 0 or desc.regst_size == 0:  # control registers hold no bytes
            return
        start = desc.mem_block_offset + index * desc.regst_size
        spans = [(start, desc.regst_size)]
        piece = desc.piece_inplace_consumed_regst_desc_id
        if piece >= 0:  # a gathered weight around a variable (gather_inplace.py): its bars leave out the variable's
            own = sum(d.nbytes for d in self.plan.regst_descs[piece].lbi2blob_desc.values())  # rows (its own bar)
            at = desc.piece_inplace_offset
            spans = [(a, n) for a, n in ((start, at), (start + at + own, desc.regst_size - at - own)) if n > 0]
        parts = [Lifetime(regst_id, index, desc.mem_block_id, a, n, act, act, tuple(desc.lbi2blob_desc))
                 for a, n in spans]
        self.lifetimes += parts
        if parts:
            self._open[(regst_id, index)] = parts[0]
        if len(parts) > 1:
            self._rest[(regst_id, index)] = parts[1]

    def _share(self, regst_id: int, index: int, act: int) -> None:
        lt = self._open.get((self._inplace[regst_id], index))
        if lt is not None:
            lt.last_act = act
            lt.lbns += tuple(lbn for lbn in self.runtime.regsts[regst_id][index].blobs if lbn not in lt.lbns)

    def record(self, event: ActEvent, stats: bool = True) -> None:
        index = len(self.acts)
        for regst_id, i in event.read:
            # a gathered weight's read reads its part after its variable's rows and the variable it holds too
            for lt in (self._open.get((self._inplace.get(regst_id, regst_id), i)), self._rest.get((regst_id, i)),
                       self._open.get((self._held.get(regst_id, -1), 0))):
                if lt is not None:
                    lt.last_act = index
        blobs: dict[str, Any] = {}
        for regst_id, i in event.written:
            if regst_id in self._inplace:
                self._share(regst_id, i, index)
            else:
                self._start(regst_id, i, index)
            if stats:
                per_lbn = [blob_stats(lbn, array, bins=0, preview=False).stats_dict() | {"lbn": lbn}
                           for lbn, array in self.runtime.regsts[regst_id][i].blobs.items()]
                if per_lbn:
                    blobs[f"r:{regst_id}"] = per_lbn[0] | ({"blobs": per_lbn} if len(per_lbn) > 1 else {})
        self.acts.append({"index": index, "node": f"t:{event.actor_id}", "actor": event.actor_name,
                          "job": self.plan.job_names[event.job_id], "task_type": event.task_type,
                          "reads": [f"r:{r}" for r, _ in event.read], "writes": [f"r:{r}" for r, _ in event.written],
                          "blobs": blobs, "executor": event.executor} | ({"tier": event.tier} if event.tier else {}))

    def undo_mark(self, event: ActEvent) -> tuple:
        """What ``record(event)`` is about to change (the debugger's history.py undoes it with ``undo``): the
        lifetimes it may extend, the open lifetimes its writes replace, and how many acts and lifetimes there are."""
        touched = []
        for regst_id, i in event.read:
            touched += [self._open.get((self._inplace.get(regst_id, regst_id), i)), self._rest.get((regst_id, i)),
                        self._open.get((self._held.get(regst_id, -1), 0))]
        keys = []
        for regst_id, i in event.written:
            if regst_id in self._inplace:
                touched.append(self._open.get((self._inplace[regst_id], i)))
            keys.append((regst_id, i))
        return (len(self.acts), len(self.lifetimes), [(lt, lt.last_act, lt.lbns) for lt in touched if lt is not None],
                [(k, self._open.get(k), self._rest.get(k)) for k in keys])

    def undo(self, mark: tuple) -> None:
        acts, lifetimes, touched, opened = mark
        del self.acts[acts:], self.lifetimes[lifetimes:]
        for lt, last_act, lbns in reversed(touched):
            lt.last_act, lt.lbns = last_act, lbns
        for key, open_, rest in opened:
            for table, value in ((self._open, open_), (self._rest, rest)):
                if value is None:
                    table.pop(key, None)
                else:
                    table[key] = value

    def blocks(self) -> list[dict[str, Any]]:
        return [{"id": f"b:{b.mem_block_id}", "size": b.mem_size, "mem_case": b.mem_case,
                 "reuse": b.enable_reuse_mem} for b in self.plan.mem_blocks]

    def memory(self) -> Memory:
        return Memory(self.blocks(), [Lifetime(**vars(lt)) for lt in self.lifetimes], len(self.acts))

    def recording(self, title: str) -> Recording:
        return Recording(title, [dict(a) for a in self.acts], self.memory())
