"""Actors, one per task, following OneFlow's protocol (actor.cpp, register_slot.cpp).

An actor acts while it is read-ready (a register in every consumed slot) and write-ready (a free register for
every produced desc). An act runs the kernel, sends each produced register to its consumers (reading count =
number of consumers) and returns each consumed register to its producer; a produced register is writable
again once every consumer has returned it. At shutdown, an actor whose input can never be ready again sends
EORD downstream, waits as a zombie until its registers come back, then is done.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from ..ir import TaskProto
from ..kernels.registry import Kernel

if TYPE_CHECKING:
    from .events import EventSink
    from .regst import Regst
    from .runtime import Runtime

MSG_REGST, MSG_RETURN, MSG_EORD = 0, 1, 2
OutEdge = tuple[int, "deque[Regst]", int, tuple[tuple["Actor", "deque[Regst]", "list[Any] | None"], ...]]
InEdge = tuple[int, "deque[Regst]", "Actor", "deque[Regst]", "list[Any] | None"]
Moved = tuple[list[tuple[int, int]], list[tuple[int, int]]]  # an act's (read, written): (register id, index) each


class Actor:
    __slots__ = (
        "rt", "task", "actor_id", "name", "readable", "readable_list", "writable", "writable_list",
        "consumers", "producer_of", "eord_received", "remaining_eord", "total_reading_cnt", "act_id", "state",
        "queued", "_kernel", "fn", "in_arrays", "out_arrays", "io_lbns", "out_edges", "in_edges", "ready_queue",
        "slots", "out_by_id", "in_by_id", "alive", "ready_slots",
    )

    def __init__(self, rt: Runtime, task: TaskProto, regsts: dict[int, list[Regst]]) -> None:
        self.rt = rt
        self.task = task
        self.actor_id = task.task_id
        self.name = task.name
        consumed_ids = task.consumed_ids
        self.readable: dict[int, deque[Regst]] = {i: deque() for i in consumed_ids}
        self.readable_list = list(self.readable.values())
        self.writable: dict[int, deque[Regst]] = {
            d.regst_desc_id: deque(regsts[d.regst_desc_id]) for d in task.produced_regst_desc.values()
        }
        self.writable_list = list(self.writable.values())
        # One deque holding a token while the actor is "normal" (update_state empties it): with it, all(slots) is the
        # whole of is_ready(), which the act loop then asks without a Python call (``ready_slots``).
        self.alive: deque[bool] = deque((True,))
        self.slots = [*self.readable_list, *self.writable_list, self.alive]  # they never change
        # all(ready_slots) is is_ready() for an actor that keeps Actor's rule; None for the main job's actors, whose
        # readiness is their own (ask is_ready()). The edges carry each peer's, so the act loop asks without a call.
        self.ready_slots: list[Any] | None = self.slots if type(self).is_ready is Actor.is_ready else None
        self.consumers: dict[int, list[Actor]] = {}  # filled by the runtime once every actor exists
        self.producer_of: dict[int, Actor] = {}
        self.eord_received: set[int] = set()
        self.remaining_eord = len(consumed_ids)
        self.total_reading_cnt = 0
        self.act_id = 0
        self.state = "normal"  # normal -> zombie -> done
        self.queued = False
        self._kernel: Kernel | None = None
        self.fn: Any = None  # the kernel's function, what an act calls (set with ``kernel``)
        self.in_arrays: list[Any] = []
        self.out_arrays: list[Any] = []
        # set when arrays rotate per act: blob names, or (register id, blob name) pairs for a boxing task
        self.io_lbns: tuple[tuple, tuple] | None = None
        self.out_edges: tuple[OutEdge, ...] = ()  # set by finish_wiring()
        self.in_edges: tuple[InEdge, ...] = ()
        self.out_by_id: dict[int, OutEdge] = {}  # produce()'s
        self.in_by_id: dict[int, InEdge] = {}  # give_back()'s
        self.ready_queue: deque[Actor] = rt.ready  # where it is queued when ready (threads.py: its thread's)

    @property
    def kernel(self) -> Kernel | None:
        """The task's kernel (kernels.registry.Kernel: what it is, for replay, events and the debugger); None for
        an actor that runs none."""
        return self._kernel

    @kernel.setter
    def kernel(self, kernel: Kernel | None) -> None:
        if kernel is not None and not isinstance(kernel, Kernel):
            raise TypeError(f"actor {self.name}: a kernel is a kernels.Kernel (Kernel(fn), or kernel.wrap(fn) to run "
                            f"the actor's own through fn), got {kernel!r}")
        self._kernel, self.fn = kernel, (kernel.fn if kernel is not None else None)

    def finish_wiring(self) -> None:
        """The act loop's edges, once consumers and producers are known (again after flowlab.distributed puts
        stand-ins for actors on other machines): every slot a register moves between is looked up here, once, not
        by regst id in each act. ``out_edges``: (regst id, own free slot, reading count, ((consumer, its slot for
        the register, its ready_on_arrival), ...)); ``in_edges``: (regst id, own slot, producer, the producer's
        free slot, its ready_slots). Stand-ins for actors on other machines are never asked (always ``queued``)."""
        self.out_edges = tuple((i, q, len(self.consumers[i]), tuple((c, c.readable[i], c.ready_on_arrival(i))
                                                                     for c in self.consumers[i]))
                               for i, q in self.writable.items())
        self.in_edges = tuple((i, q, p, p.writable[i], p.ready_slots)
                              for i, q in self.readable.items() for p in (self.producer_of[i],))
        self.out_by_id = {edge[0]: edge for edge in self.out_edges}
        self.in_by_id = {edge[0]: edge for edge in self.in_edges}

    # -- readiness ---------------------------------------------------------------------------------
    def ready_on_arrival(self, regst_id: int) -> list[Any] | None:
        """Slots whose all() is is_ready() just after a register of ``regst_id`` arrived in this actor's slot
        (None: ask is_ready()). The main job's actors whose readiness an arrival settles say so (main_actors.py)."""
        return self.ready_slots

    def is_ready(self) -> bool:
        """A register in every consumed slot and a free one in every produced slot (one all() over both: the
        protocol's most frequent question, about two per act)."""
        return all(self.slots)  # the last slot is ``alive``: empty once the state is not "normal"

    def never_ready_again(self) -> bool:
        """An input ended (EORD) and its slot is empty (OneFlow's IsCustomizedReadAlwaysUnReadyFromNow)."""
        return any(i in self.eord_received and not q for i, q in self.readable.items())

    def blocked_reason(self) -> str | None:
        """Why the actor cannot act now, in words (None when it can)."""
        if self.state != "normal":
            return self.state
        for regst_id, q in self.readable.items():
            if not q:
                producer = self.producer_of[regst_id]
                return f"waiting for register r{regst_id} from {producer.name}"
        for regst_id, q in self.writable.items():
            if not q:
                return f"no free output register r{regst_id} (consumers still reading)"
        return None

    # -- acting ------------------------------------------------------------------------------------
    # Register messages are delivered as they are sent: a delivery only fills a slot and may queue the
    # receiver as ready; it never runs an act, so the act order is what the ready queue says either way. A
    # receiver is queued on its own ``ready_queue``: the runtime's, or in parallel run mode its thread's.
    def act(self, sink: EventSink | None = None) -> Moved | None:
        """One act: kernel, then produce every output and return every input. The only act of a task's actor,
        whichever loop runs it (Runtime.acts). ``sink``: the runtime's event sink, None when nobody listens; with
        one, the act returns the registers it moves, (read, written) as (register id, index) pairs, read off the
        fronts of its slots before it moves them (what it pops); with none it builds nothing (returns None)."""
        moved = None if sink is None else self.moved()
        kernel = self.fn
        if kernel is not None:  # first, so a kernel that raises leaves the protocol state untouched
            if self.io_lbns is not None:
                self._bind_rotating_arrays()
            kernel(self.in_arrays, self.out_arrays)
        act_id = self.act_id = self.act_id + 1
        for _, slot, n, consumers in self.out_edges:
            regst = slot.popleft()
            regst.act_id = act_id
            if n:
                regst.reading_cnt = n
                self.total_reading_cnt += n
                for consumer, inbox, ready in consumers:
                    inbox.append(regst)
                    if not consumer.queued and (all(ready) if ready is not None else consumer.is_ready()):
                        consumer.queued = True
                        consumer.ready_queue.append(consumer)
            else:
                slot.append(regst)
        for _, slot, producer, home, ready in self.in_edges:  # on_return, inlined: the hottest loop
            regst = slot.popleft()
            regst.reading_cnt = left = regst.reading_cnt - 1
            producer.total_reading_cnt -= 1
            if left == 0:  # writable again: only now can the producer become ready
                home.append(regst)
                if not producer.queued and (all(ready) if ready is not None else producer.is_ready()):
                    producer.queued = True
                    producer.ready_queue.append(producer)
            if producer.state == "zombie":
                producer.update_state()
        return moved

    def moved(self) -> Moved:
        """The registers the next act moves: the front of every consumed slot (read) and of every produced one
        (written), in edge order, as (register id, index). Nothing before the act's own pops changes a front: the
        kernel touches arrays, not slots, and the act appends only at the back of a slot."""
        return ([(edge[0], edge[1][0].index) for edge in self.in_edges],
                [(edge[0], edge[1][0].index) for edge in self.out_edges])

    def _bind_rotating_arrays(self) -> None:
        in_lbns, out_lbns = self.io_lbns  # type: ignore[misc]
        if type((in_lbns or out_lbns or ("",))[0]) is tuple:  # (register, blob): one blob from several registers
            self.in_arrays = [self.readable[rid][0].blobs[lbn] for rid, lbn in in_lbns]
            self.out_arrays = [self.writable[rid][0].blobs[lbn] for rid, lbn in out_lbns]
            return
        fronts = [q[0].blobs for q in self.readable_list]
        self.in_arrays = [next(b[lbn] for b in fronts if lbn in b) for lbn in in_lbns]
        outs = [q[0].blobs for q in self.writable_list]
        self.out_arrays = [next(b[lbn] for b in outs if lbn in b) for lbn in out_lbns]

    def produce(self, edge: OutEdge, value: int | None = None) -> tuple[int, int]:
        """Hand one register of an out edge (``out_by_id[regst_id]``) to its consumers (used by actors with their
        own act), after writing ``value`` into its first element when given (the main job's ids)."""
        regst_id, slot, n, consumers = edge
        regst = slot.popleft()
        if value is not None:
            regst.ids[0] = value
        regst.act_id = self.act_id
        if n:
            regst.reading_cnt = n
            self.total_reading_cnt += n
            for consumer, inbox, ready in consumers:
                inbox.append(regst)  # on_regst and rt.wake, inlined
                if not consumer.queued and (all(ready) if ready is not None else consumer.is_ready()):
                    consumer.queued = True
                    consumer.ready_queue.append(consumer)
        else:
            slot.append(regst)
        return regst_id, regst.index

    def give_back(self, edge: InEdge) -> tuple[int, int]:
        """Return the front register of an in edge (``in_by_id[regst_id]``) to its producer."""
        regst_id, slot, producer, home, ready = edge
        regst = slot.popleft()
        regst.reading_cnt = left = regst.reading_cnt - 1  # on_return and rt.wake, inlined
        producer.total_reading_cnt -= 1
        if left == 0:
            home.append(regst)
            if not producer.queued and (all(ready) if ready is not None else producer.is_ready()):
                producer.queued = True
                producer.ready_queue.append(producer)
        if producer.state == "zombie":
            producer.update_state()
        return regst_id, regst.index

    # -- messages ----------------------------------------------------------------------------------
    def on_regst(self, regst: Regst) -> None:
        self.readable[regst.desc.regst_desc_id].append(regst)

    def on_return(self, regst: Regst) -> None:
        regst.reading_cnt -= 1
        self.total_reading_cnt -= 1
        if regst.reading_cnt == 0:
            self.writable[regst.desc.regst_desc_id].append(regst)
        if self.state == "zombie":  # the last register coming home ends a zombie
            self.update_state()

    def on_eord(self, regst_id: int) -> None:
        self.eord_received.add(regst_id)
        self.remaining_eord -= 1

    def update_state(self) -> None:
        """Move normal -> zombie (sending EORD) -> done as the protocol allows."""
        if self.state == "normal" and self.never_ready_again():
            self.state = "zombie"
            self.alive.clear()
            for regst_id, consumers in self.consumers.items():
                for consumer in consumers:
                    self.rt.send(consumer, MSG_EORD, regst_id)
        if self.state == "zombie" and self.remaining_eord == 0 and self.total_reading_cnt == 0:
            self.state = "done"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} act {self.act_id} {self.state}>"
