"""The undo record of one act: what the act is about to overwrite, taken just before it, so that ``undo`` puts the
runtime back exactly as it was (history.py keeps these records and steps back through them).

Taken, not whole snapshots, but what one act can touch (runtime/actor.py's ``act`` and the main job's own acts):

- the bytes of the registers it writes: the front register of each produced slot (copy on write), and, for an op
  that updates its inputs in place (an optimizer's ``*_update``, ``assign``: an op with no outputs), the front
  register of each consumed slot;
- the protocol state of the actor and of its neighbours (every consumer and producer: an act appends to their
  slots, queues them as ready, counts their reading registers): each slot's registers, counters, state, flags, and
  a main-job actor's own fields (pending ids, the lock's queue and held sections) as small records;
- its registers' counters (reading count, act id), the runtime's ready queue, messages, buffers (the wait buffer,
  ForeignInput/Output, CallbackNotifier queues), act count and last-acts ring, the transport's counters;
- a seeded random stream a kernel draws from (dropout): its generator state.

Restoring a deque or a list puts the saved items back into the same object (the act loop's edges hold them), so
identities the runtime cached at wiring stay valid.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from ..runtime import Actor, Runtime
from ..runtime.gpu import on_device

# Fields an act never changes (wiring, names, the kernel) or that ``_actor_record`` saves itself.
_BASE = frozenset(_name for _cls in Actor.__mro__ for _name in getattr(_cls, "__slots__", ()))
_FIXED = frozenset({"rt", "task", "actor_id", "name", "consumers", "producer_of", "kernel", "out_edges", "in_edges",
                    "out_by_id", "in_by_id", "ready_queue", "slots", "ready_slots", "readable_list", "writable_list",
                    "io_lbns", "readable", "writable"})


def _slots_of(actor: Actor) -> list[str]:
    """A main-job actor's own fields (its class's slots beyond Actor's)."""
    return [name for cls in type(actor).__mro__ for name in getattr(cls, "__slots__", ()) if name not in _BASE]


def _capture(value: Any) -> Any:
    """(object, its contents) for a container (contents captured recursively), the value itself otherwise."""
    if isinstance(value, (deque, list)):
        return ("seq", value, [_capture(v) for v in value])
    if isinstance(value, dict):
        return ("dict", value, {k: _capture(v) for k, v in value.items()})
    if isinstance(value, set):
        return ("set", value, set(value))
    return ("value", value, None)


def _restored(saved: Any) -> Any:
    kind, obj, contents = saved
    if kind == "seq":
        items = [_restored(v) for v in contents]
        obj.clear()
        obj.extend(items)
    elif kind == "dict":
        items = {k: _restored(v) for k, v in contents.items()}
        obj.clear()
        obj.update(items)
    elif kind == "set":
        obj.clear()
        obj.update(contents)
    return obj


class _ActorInfo:
    """What an act of one actor may touch, worked out once per actor."""

    __slots__ = ("neighbours", "regsts", "in_place", "generators", "extra")

    def __init__(self, rt: Runtime, actor: Actor) -> None:
        seen = {id(actor): actor}
        for consumers in actor.consumers.values():
            for consumer in consumers:
                if isinstance(consumer, Actor):
                    seen.setdefault(id(consumer), consumer)
        for producer in actor.producer_of.values():
            if isinstance(producer, Actor):
                seen.setdefault(id(producer), producer)
        self.neighbours = list(seen.values())
        self.regsts = [r for rid in (*actor.readable, *actor.writable) for r in rt.regsts.get(rid, ())]
        ops = actor.task.exec_sequence
        # an op with no outputs that runs a kernel writes its inputs (model updates, assign): keep their bytes too
        self.in_place = actor.kernel is not None and bool(ops) and not ops[0].output_lbns
        self.generators = _generators(actor.fn)
        self.extra = {id(a): _slots_of(a) for a in self.neighbours if type(a) is not Actor}


def _generators(fn: Any, depth: int = 4) -> list[np.random.Generator]:
    """The seeded random streams a kernel closure draws from (dropout's), looked for through wrapping closures."""
    found: list[np.random.Generator] = []
    if depth == 0 or fn is None:
        return found
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, np.random.Generator):
            found.append(value)
        elif callable(value) and getattr(value, "__closure__", None):
            found += [g for g in _generators(value, depth - 1) if all(g is not f for f in found)]
    return found


class ActUndo:
    """What one act overwrote. ``nbytes``: the register bytes kept (the records are a few hundred bytes more)."""

    __slots__ = ("seq", "runtime", "actors", "regsts", "arrays", "generators", "nbytes")

    def __init__(self, seq: int, runtime: tuple, actors: list, regsts: list, arrays: list, generators: list) -> None:
        self.seq, self.runtime, self.actors, self.regsts = seq, runtime, actors, regsts
        self.arrays, self.generators = arrays, generators
        self.nbytes = sum(copy.nbytes for _, copy in arrays)


class UndoTaker:
    """Takes an act's undo record before it runs (``before``) and puts it back (``undo``), for one runtime."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._info: dict[int, _ActorInfo] = {}

    def runtime_state(self) -> tuple:
        """The runtime's own state an act (or choosing the next one) changes; taken before ``peek``, which drops
        stale entries of the ready queue."""
        rt = self.rt
        ring = rt.recent
        dropped = ring[0] if ring.maxlen is not None and len(ring) == ring.maxlen else None
        transport = rt.transport
        return (rt._seq, [(a, a.queued) for a in rt.ready], list(rt.msgs),
                [(q, list(q)) for q in rt.buffers.values()], len(ring), dropped,
                getattr(transport, "messages", None), getattr(transport, "bytes_moved", None), len(rt._notifiers))

    def before(self, actor: Actor, runtime_state: tuple) -> ActUndo:
        info = self._info.get(actor.actor_id)
        if info is None:
            info = self._info[actor.actor_id] = _ActorInfo(self.rt, actor)
        actors = [_actor_record(a, info.extra.get(id(a))) for a in info.neighbours]
        regsts = [(r, r.reading_cnt, r.act_id, r.event) for r in info.regsts]
        arrays = []
        for q in actor.writable_list:
            if q:
                arrays += [(a, _copy(a)) for a in q[0].blobs.values()]
        if info.in_place:
            for q in actor.readable_list:
                if q:
                    arrays += [(a, _copy(a)) for a in q[0].blobs.values()]
        generators = [(g, g.bit_generator.state) for g in info.generators]
        return ActUndo(runtime_state[0], runtime_state, actors, regsts, arrays, generators)

    def undo(self, record: ActUndo) -> None:
        rt = self.rt
        for array, copy in reversed(record.arrays):  # reversed: a register written twice ends as it first was
            _put(array, copy)
        for generator, state in record.generators:
            generator.bit_generator.state = state
        for regst, reading_cnt, act_id, event in record.regsts:
            regst.reading_cnt, regst.act_id, regst.event = reading_cnt, act_id, event
        for saved in record.actors:
            _restore_actor(saved)
        seq, ready, msgs, buffers, ring_len, dropped, messages, moved, notifiers = record.runtime
        while len(rt._notifiers) > notifiers:  # a cache filled on a job's first notify: as a fresh run has it
            rt._notifiers.popitem()
        rt._seq = seq
        rt.ready.clear()
        for actor, queued in ready:
            rt.ready.append(actor)
            actor.queued = queued
        rt.msgs.clear()
        rt.msgs.extend(msgs)
        for q, items in buffers:
            q.clear()
            q.extend(items)
        ring = rt.recent  # the act appended one entry, and dropped the oldest when the ring was full
        while len(ring) > ring_len:
            ring.pop()
        if dropped is not None:
            ring.pop()
            ring.appendleft(dropped)
        if messages is not None:
            rt.transport.messages, rt.transport.bytes_moved = messages, moved


def _actor_record(a: Actor, extra: list[str] | None) -> tuple:
    return (a, [tuple(q) for q in a.readable_list], [tuple(q) for q in a.writable_list], len(a.alive),
            set(a.eord_received) if a.eord_received else None, a.remaining_eord, a.total_reading_cnt, a.act_id,
            a.state, a.queued, a.in_arrays, a.out_arrays,
            [(name, _capture(getattr(a, name, None))) for name in extra] if extra else None)


def _restore_actor(saved: tuple) -> None:
    (a, readable, writable, alive, eord, remaining, total, act_id, state, queued, ins, outs, extra) = saved
    for q, items in zip(a.readable_list, readable):
        q.clear()
        q.extend(items)
    for q, items in zip(a.writable_list, writable):
        q.clear()
        q.extend(items)
    if alive and not a.alive:
        a.alive.append(True)
    elif not alive:
        a.alive.clear()
    a.eord_received.clear()
    if eord:
        a.eord_received.update(eord)
    a.remaining_eord, a.total_reading_cnt, a.act_id, a.state, a.queued = remaining, total, act_id, state, queued
    a.in_arrays, a.out_arrays = ins, outs
    for name, value in extra or ():
        setattr(a, name, _restored(value))


def _copy(array: Any) -> np.ndarray:
    return array.copy_to_host() if on_device(array) else array.copy()


def _put(array: Any, copy: np.ndarray) -> None:
    if on_device(array):
        array.copy_to_device(copy)
    else:
        array[...] = copy
