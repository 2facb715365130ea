"""``protocol_state(runtime)``: everything the actor protocol (and the debugger) can observe, as plain data.

The proof that replay is an optimisation and not a second way of running compares this snapshot after the same
calls run by the protocol alone and by the replay layer. It is deliberately generic, so that state added to the
runtime later is compared without anyone remembering to list it: every slot of every actor (act ids, states,
queued flags, reading counts, EORDs, which registers sit in which slot and in what order, the main-job actors'
pending ids, lock queue and held sections, even which kernel is installed), every register (act id, reading
count, the bytes of its blobs, and the id a main-job register holds), every attribute of the runtime but its
layer (act count, launches, buffers, ready queue, messages, routes), and a digest of every memory block.
Objects become stable names: an actor its task id, a register (desc id, index), an array its place in a memory
block, a function its qualified name.
"""

from __future__ import annotations

import hashlib
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir import TaskProto
from ..runtime.actor import Actor
from ..runtime.job_instance import JobInstance
from ..runtime.regst import Regst

if TYPE_CHECKING:
    from ..runtime.runtime import Runtime

# the layer itself (what it caches is not the protocol's state), the last-acts ring (a diagnosis: the replay
# layer performs acts without noting them, and OS threads note them in their own order) and who listens (the event
# sink and its subscribers: observing a run must not change it, which tests/test_event_sink.py checks with this), and
# the name its act events give their executor (runtime/executor.py: which executor runs it, not what it is)
NOT_PROTOCOL = frozenset({"layer", "recent", "sink", "hooks", "executor"})
WALKED = frozenset({"actors", "regsts", "arenas", "plan"})  # snapshotted below, one by one (the plan is fixed)


def _slots(obj: object) -> list[str]:
    return [name for cls in type(obj).__mro__ for name in getattr(cls, "__slots__", ())]


class _Plain:
    """Turns runtime objects into comparable plain data."""

    def __init__(self, rt: Runtime) -> None:
        self.blocks = [(a.ctypes.data, a.ctypes.data + a.nbytes, block_id) for block_id, a in rt.arenas.items()]

    def array(self, a: np.ndarray) -> tuple[Any, ...]:
        ptr = a.ctypes.data
        for start, end, block_id in self.blocks:
            if start <= ptr < end:
                return ("block", block_id, ptr - start, a.shape, a.strides, a.dtype.str)
        return ("array", a.shape, a.dtype.str, _digest(a))

    def __call__(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return self.array(value)
        if isinstance(value, Actor):
            return ("actor", value.actor_id)
        if isinstance(value, Regst):
            return ("regst", value.desc.regst_desc_id, value.index)
        if isinstance(value, TaskProto):
            return ("task", value.task_id)
        if isinstance(value, JobInstance):
            return ("instance", value.job_name, value.seq, value.finished)
        if isinstance(value, (list, tuple, deque)):
            return tuple(self(v) for v in value)
        if isinstance(value, (set, frozenset)):
            return tuple(sorted((self(v) for v in value), key=repr))
        if isinstance(value, dict):
            return tuple(sorted(((self(k), self(v)) for k, v in value.items()), key=repr))
        if type(value).__name__ == "Runtime":
            return ("runtime",)
        if callable(value):  # kernels: which one is installed (a recorder left in place would show)
            fn = getattr(value, "py_func", value)
            return ("function", getattr(fn, "__module__", None), getattr(fn, "__qualname__", type(fn).__name__))
        return ("object", type(value).__qualname__)


def _digest(a: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(a).view(np.uint8).tobytes()).hexdigest()[:16]


def protocol_state(rt: Runtime) -> dict[str, Any]:
    """The runtime's protocol state after ``rt.observe()`` (a layer's deferred bookkeeping written first)."""
    rt.observe()
    plain = _Plain(rt)
    actors = {}
    for actor in rt.actors.values():
        actors[f"{actor.name}#{actor.actor_id}"] = {slot: plain(getattr(actor, slot, None)) for slot in _slots(actor)}
    regsts = {}
    id_producers = {id(a) for a in rt.actors.values() if _writes_ids(a)}
    for rid, regs in rt.regsts.items():
        producer = rt.actors[regs[0].desc.producer_task_id]
        for regst in regs:
            entry: dict[str, Any] = {"act_id": regst.act_id, "reading_cnt": regst.reading_cnt,
                                     "blobs": {lbn: _digest(b) for lbn, b in regst.blobs.items()}}
            if id(producer) in id_producers:
                entry["id"] = int(regst.first[0])
            regsts[(rid, regst.index)] = entry
    runtime = {name: plain(value) for name, value in vars(rt).items() if name not in NOT_PROTOCOL | WALKED}
    blocks = {block_id: _digest(arena) for block_id, arena in rt.arenas.items()}
    return {"runtime": runtime, "actors": actors, "regsts": regsts, "blocks": blocks}


def _writes_ids(actor: Actor) -> bool:
    from .capture import ID_ACTORS

    return isinstance(actor, ID_ACTORS)


def differences(a: dict[str, Any], b: dict[str, Any], limit: int = 12) -> list[str]:
    """Where two snapshots differ, in words (at most ``limit`` places)."""
    out: list[str] = []

    def walk(x: Any, y: Any, path: str) -> None:
        if len(out) >= limit or x == y:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for key in list(x) + [k for k in y if k not in x]:
                walk(x.get(key, "<missing>"), y.get(key, "<missing>"), f"{path}[{key!r}]")
        else:
            out.append(f"{path}: {x!r} != {y!r}")

    walk(a, b, "state")
    return out

