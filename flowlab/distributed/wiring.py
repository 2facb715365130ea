"""One machine's share of a Runtime: its own actors, with stand-ins for the peers that live on other machines.

Every machine process builds the whole Plan's Runtime (the same task ids, registers and kernels everywhere) and
then keeps only its machine's actors. An edge between machines is a register whose producer and consumer live on
different machines; on each side the missing actor is replaced by a stand-in that the actor protocol's inlined
hand-offs drive without knowing it:

* ``RemoteConsumer`` (on the producer's machine): handing it a register ships the register's blobs, whole, to
  the consumer's machine (fire-and-forget); it never acts.
* ``RemoteProducer`` (on the consumer's machine): the consumer returning its copy of the register sends the
  return to the producer's machine (OneFlow's register return), where the producer may reuse it.

The receiving machine copies the blobs into its own copy of the register (object-store arrays are read-only), and
its CopyCommNet actor then copies them into the register it produces, as OneFlow's CopyCommNetActor does after a
CommNet read. Messages carry a sequence number per (sender, receiver) pair and are applied in that order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..runtime.actor import MSG_EORD, MSG_RETURN, Actor
from ..runtime.regst import Regst
from ..runtime.runtime import Runtime
from ..runtime.transport import Transport

# A message between machines: ("regst", regst_id, index, act_id, consumer_task_ids, arrays),
# ("return", regst_id, index, count), ("eord", regst_id, consumer_task_id), ("close",). A register goes to another
# machine once, whatever the number of its consumers there (the main job's ticks have several), and comes back
# once, when all of them have returned it.
Message = tuple[Any, ...]
Batch = tuple[int, int, list[Message]]  # (from machine, sequence number, messages)


class Link:
    """The messages one machine has sent and not yet handed to the engine, per receiving machine."""

    def __init__(self, machine: int) -> None:
        self.machine = machine
        self.pending: dict[int, list[Message]] = defaultdict(list)
        self.seq: dict[int, int] = defaultdict(int)
        self.dirty = False  # something waits in ``pending``
        self.messages = 0  # registers shipped (the benchmark's messages per step)
        self.bytes = 0

    def send(self, to_machine: int, message: Message) -> None:
        self.pending[to_machine].append(message)
        self.dirty = True

    def ship(self, to_machine: int, regst: Regst, consumer_id: int) -> None:
        """One register for a consumer on ``to_machine``; a consumer there of the same register, act and index
        handed it in the same act (consumers are served one after another) joins the message already made."""
        rid = regst.desc.regst_desc_id
        pending = self.pending[to_machine]
        if pending:
            last = pending[-1]
            if last[0] == "regst" and last[1] == rid and last[2] == regst.index and last[3] == regst.act_id:
                last[4].append(consumer_id)
                return
        arrays = tuple(regst.blobs.values())
        pending.append(("regst", rid, regst.index, regst.act_id, [consumer_id], arrays))
        self.dirty = True
        self.messages += 1
        self.bytes += sum(a.nbytes for a in arrays)

    def take(self) -> list[tuple[int, Batch]]:
        """The batches to hand over now, one per receiving machine, in sequence."""
        out = []
        self.dirty = False
        for to_machine, messages in self.pending.items():
            if messages:
                out.append((to_machine, (self.machine, self.seq[to_machine], list(messages))))
                self.seq[to_machine] += 1
                messages.clear()
        return out


class _Ship:
    """The consumer slot of a RemoteConsumer: appending a register ships it."""

    __slots__ = ("consumer", "regst_id")

    def __init__(self, consumer: RemoteConsumer, regst_id: int) -> None:
        self.consumer, self.regst_id = consumer, regst_id

    def append(self, regst: Regst) -> None:
        c = self.consumer
        c.link.ship(c.machine, regst, c.actor_id)

    def __bool__(self) -> bool:
        return False


class RemoteConsumer:
    """A consumer task on another machine, as its producer's machine sees it."""

    def __init__(self, actor: Actor, link: Link) -> None:
        self.task, self.actor_id, self.machine, self.link = actor.task, actor.actor_id, actor.task.machine_id, link
        self.name = f"{actor.name} (machine {self.machine})"
        self.readable = {rid: _Ship(self, rid) for rid in actor.readable}
        self.queued = True  # never enters this machine's ready queue
        self.state = "normal"

    def is_ready(self) -> bool:
        return False

    def ready_on_arrival(self, regst_id: int) -> None:
        """Never made ready by an arrival here (Actor's edges ask every consumer): it acts on its own machine."""
        return None

    def on_regst(self, regst: Regst) -> None:
        self.readable[regst.desc.regst_desc_id].append(regst)

    def on_eord(self, regst_id: int) -> None:
        self.link.send(self.machine, ("eord", regst_id, self.actor_id))

    def update_state(self) -> None:
        pass


class _Ack:
    """The writable slot of a RemoteProducer: a register coming back to it is returned to its machine."""

    __slots__ = ("producer", "regst_id")

    def __init__(self, producer: RemoteProducer, regst_id: int) -> None:
        self.producer, self.regst_id = producer, regst_id

    def append(self, regst: Regst) -> None:
        p = self.producer
        p.link.send(p.machine, ("return", self.regst_id, regst.index, p.local_consumers[self.regst_id]))


class RemoteProducer:
    """A producer task on another machine, as a consumer's machine sees it."""

    def __init__(self, actor: Actor, link: Link, local_consumers: dict[int, int]) -> None:
        self.task, self.actor_id, self.machine, self.link = actor.task, actor.actor_id, actor.task.machine_id, link
        self.base_name = f"{actor.name} on machine {self.machine}"
        self.flight: Callable[[], set[int]] | None = None  # registers in flight to here (set while stepping)
        self.writable = {rid: _Ack(self, rid) for rid in actor.writable}
        self.local_consumers = local_consumers  # regst id -> its consumers on this machine
        self.total_reading_cnt = 0
        self.queued = True
        self.state = "normal"
        self.ready_slots = None  # a register returned here never makes it ready: it acts on its own machine

    @property
    def name(self) -> str:
        """What a waiting consumer's ``blocked_reason()`` names: the producer, and a register of it in flight."""
        moving = sorted(set(self.writable) & self.flight()) if self.flight is not None else []
        if moving:
            return f"{self.base_name} (r{moving[0]} is in flight from machine {self.machine})"
        return self.base_name

    def is_ready(self) -> bool:
        return False

    def on_return(self, regst: Regst) -> None:
        regst.reading_cnt -= 1
        if regst.reading_cnt == 0:
            self.writable[regst.desc.regst_desc_id].append(regst)

    def update_state(self) -> None:
        pass


class CopyTransport(Transport):
    """The CopyCommNet kernel's read, once the register has landed on this machine: a local copy. The bytes that
    crossed machines are counted by the Link when they were shipped."""

    def send(self, blobs: Sequence[np.ndarray], from_machine: int, to_machine: int,
             into: Sequence[np.ndarray]) -> None:
        for src, dst in zip(blobs, into, strict=True):
            np.copyto(dst, src, casting="no")


def localize(rt: Runtime, machine: int, link: Link) -> dict[int, RemoteProducer]:
    """Keep ``machine``'s actors in ``rt.actors`` (the others move to ``rt.remote_actors``) and put stand-ins on
    every edge between machines; -> the stand-ins for producers on other machines, by task id."""
    local = {tid: a for tid, a in rt.actors.items() if a.task.machine_id == machine}
    remote = {tid: a for tid, a in rt.actors.items() if a.task.machine_id != machine}
    consumers: dict[int, RemoteConsumer] = {}
    producers: dict[int, RemoteProducer] = {}
    for actor in local.values():
        for rid, peers in actor.consumers.items():
            actor.consumers[rid] = [p if p.task.machine_id == machine else
                                    consumers.setdefault(p.actor_id, RemoteConsumer(p, link)) for p in peers]
        for rid, producer in actor.producer_of.items():
            if producer.task.machine_id != machine:
                if producer.actor_id not in producers:
                    counts = {r: sum(c.task.machine_id == machine for c in cs) for r, cs in producer.consumers.items()}
                    producers[producer.actor_id] = RemoteProducer(producer, link, counts)
                actor.producer_of[rid] = producers[producer.actor_id]  # type: ignore[assignment]
        actor.finish_wiring()
    rt.actors = local
    rt.remote_actors = remote
    rt.transport = CopyTransport()
    for actor in local.values():  # the CopyCommNet kernels were bound to the in-process transport
        if actor.task.task_type == "CopyCommNet":
            rt._setup_boxing(actor)
    return producers


class Inbox:
    """Applies batches from other machines to a Runtime in each sender's sequence order."""

    def __init__(self, rt: Runtime, on_close: Callable[[], None] | None = None) -> None:
        self.rt = rt
        self.next_seq: dict[int, int] = defaultdict(int)
        self.early: dict[tuple[int, int], list[Message]] = {}
        self.on_close = on_close

    def apply(self, batch: Batch) -> None:
        sender, seq, messages = batch
        self.early[(sender, seq)] = messages
        while (sender, self.next_seq[sender]) in self.early:
            for message in self.early.pop((sender, self.next_seq[sender])):
                self._apply_one(message)
            self.next_seq[sender] += 1

    def _apply_one(self, message: Message) -> None:
        rt = self.rt
        kind = message[0]
        if kind == "regst":
            _, rid, index, act_id, consumer_ids, arrays = message
            regst = rt.regsts[rid][index]
            for dst, src in zip(regst.blobs.values(), arrays, strict=True):
                np.copyto(dst, src, casting="no")  # arrays from the object store are read-only: copy them in
            regst.act_id = act_id
            regst.reading_cnt = len(consumer_ids)
            for consumer_id in consumer_ids:
                consumer = rt.actors[consumer_id]
                consumer.readable[rid].append(regst)
                rt.wake(consumer)
        elif kind == "return":
            _, rid, index, count = message
            producer = rt.actors[rt.plan.regst_descs[rid].producer_task_id]
            for _ in range(count):
                rt.msgs.append((producer, MSG_RETURN, rt.regsts[rid][index]))
        elif kind == "eord":
            _, rid, consumer_id = message
            rt.msgs.append((rt.actors[consumer_id], MSG_EORD, rid))
        elif kind == "close":
            if self.on_close is not None:
                self.on_close()
        else:
            raise ValueError(f"unknown message between machines: {message[:1]}")
