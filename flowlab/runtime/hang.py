"""Why a call makes no progress: the wait-for graph of a runtime's blocked actors, and ``HangError``.

An actor acts when it holds a register in every consumed slot and a free one in every produced slot (the AND
model), so "A waits for B" means one of A's slots can only be filled by B: an empty consumed slot waits for its
producer; an empty produced slot waits for the consumers that have not returned a register of it yet. In the AND
model any cycle of such waits is a deadlock. When there is no cycle, the *wavefront* is where the flow stopped:
the blocked actors that hold some of what they need (an input register, or outputs their consumers still read).

Every run path gives the same diagnosis: the stepped loop and ``step()`` (runtime.py) and the OS-thread lanes
(threads.py) see "idle but the call has not finished" exactly; the Ray driver (distributed/runtime.py) after
FLOWLAB_MACHINE_TIMEOUT seconds with no batch from any machine. Each runtime keeps its last ``RING`` acts
(``Runtime.recent``: (actor id, act id) pairs, a deque append per act), which the diagnosis shows per machine.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import FlowlabError
from ..ir.graph import find_cycle as cycle_of
from .events import RuntimeIdle

if TYPE_CHECKING:
    from .actor import Actor
    from .runtime import Runtime

RING = 32  # acts each runtime remembers (Runtime.recent); the error text shows the last SHOWN of them
SHOWN = 8
# blocked_reason()s that mean "nothing asked of it yet", not stuck: left out of the graph
IDLE = ("waiting for a job to be launched", "waiting for a critical-section request")


def new_ring() -> deque[tuple[int, int]]:
    return deque(maxlen=RING)


@dataclass(frozen=True)
class Blocked:
    """One actor that cannot act: ``reason`` in words, ``waits_for`` the actors (task names) that can unblock it
    and ``waits_on`` their task ids (names repeat across jobs: each job has its own ``Input_0``, its ``SinkTick``)."""

    actor: str
    actor_id: int
    machine: int
    thread: int
    act_id: int
    reason: str
    waits_for: tuple[str, ...] = ()
    holds: bool = False  # holds an input register or has outputs out: the flow stopped here
    waits_on: tuple[int, ...] = ()
    job: str = ""

    def __str__(self) -> str:
        return (f"{self.actor} (job {self.job}, machine {self.machine}, thread {self.thread}, {self.act_id} acts): "
                f"{self.reason}")


@dataclass(frozen=True)
class WaitGraph:
    """The wait-for graph of one moment: ``blocked`` actors, the ``cycle`` (task names, each waiting for the next
    and the last for the first; empty when none; ``cycle_ids`` their task ids), the ``wavefront`` (where the flow
    stopped, when no cycle) and each machine's last acts, oldest first (``recent``: machine -> ["name #act", ...])."""

    blocked: tuple[Blocked, ...]
    cycle_ids: tuple[int, ...] = ()
    recent: dict[int, list[str]] = field(default_factory=dict)
    pending: tuple[str, ...] = ()  # the jobs of launched calls not finished, oldest first
    layer: str = ""  # a layer over the protocol (flowlab.replay), which performs calls without the ring seeing acts
    silent: tuple[str, ...] = ()  # machines that did not answer when asked (their actors are not in ``blocked``)

    @property
    def cycle(self) -> tuple[str, ...]:
        names = {b.actor_id: b.actor for b in self.blocked}
        return tuple(names[i] for i in self.cycle_ids)

    @property
    def wavefront(self) -> tuple[str, ...]:
        return tuple(b.actor for b in self.blocked if b.holds)

    def __bool__(self) -> bool:
        return bool(self.blocked)

    def __str__(self) -> str:
        lines = [("calls in flight: " + ", ".join(self.pending)) if self.pending else
                 "no call in flight (idle between calls: every actor waits for the next launch)"]
        lines += [f"{m} did not answer (stuck or dead): its actors are unknown" for m in self.silent]
        if self.cycle:
            lines.append("deadlock: a cycle of waits: " + " -> ".join((*self.cycle, self.cycle[0])))
        elif self.wavefront:
            lines.append("no cycle; the flow stopped at: " + ", ".join(self.wavefront))
        ring = set(self.cycle_ids)
        stuck = [b for b in self.blocked if b.holds or b.actor_id in ring]
        rest = [b for b in self.blocked if not (b.holds or b.actor_id in ring)]
        if stuck:
            lines.append(f"stuck actors ({len(stuck)}):")
            lines += [f"  {b}" for b in stuck]
        if rest:  # they hold nothing: waiting for input upstream, listed for completeness
            lines.append(f"actors waiting for input ({len(rest)}):")
            lines += [f"  {b}" for b in rest]
        for machine, acts in sorted(self.recent.items()):
            lines.append(f"last acts on machine {machine}: " + (", ".join(acts[-SHOWN:]) or "none"))
        if self.layer:
            lines.append(f"calls performed by {self.layer} are not in the last acts (its last call completed)")
        return "\n".join(lines)

    def to_dot(self) -> str:
        """Graphviz text: an edge per wait, the cycle's actors red, the wavefront's orange."""
        ring = set(self.cycle_ids)
        lines = ["digraph why_stuck {", "  node [shape=box];"]
        for b in self.blocked:
            color = "red" if b.actor_id in ring else "orange" if b.holds else "black"
            lines.append(f'  t{b.actor_id} [label="{_esc(b.actor)}\\n{_esc(b.job)}", color={color}, '
                         f'tooltip="{_esc(b.reason)}"];')
        for b in self.blocked:
            for other in b.waits_on:
                red = b.actor_id in ring and other in ring
                lines.append(f"  t{b.actor_id} -> t{other}" + (" [color=red];" if red else ";"))
        lines.append("}")
        return "\n".join(lines)

    def marks(self) -> dict[str, str]:
        """Plan payload node id ("t:<task id>") -> "cycle" / "wavefront" / "blocked": what a Plan view colours."""
        ring = set(self.cycle_ids)
        return {f"t:{b.actor_id}": "cycle" if b.actor_id in ring else "wavefront" if b.holds else "blocked"
                for b in self.blocked}

    def to_payload(self) -> dict[str, Any]:
        """JSON-able: the blocked actors (with their payload node ids), the cycle, the wavefront, the last acts."""
        return {"blocked": [{**dataclasses.asdict(b), "node": f"t:{b.actor_id}"} for b in self.blocked],
                "cycle": [f"t:{i}" for i in self.cycle_ids], "wavefront": [f"t:{b.actor_id}" for b in self.blocked
                                                                         if b.holds],
                "recent": {str(m): acts for m, acts in self.recent.items()}, "text": str(self)}


class HangError(FlowlabError, RuntimeIdle):
    """A call that can make no progress: ``graph`` (a WaitGraph) says who waits for whom and why."""

    def __init__(self, message: str, graph: WaitGraph) -> None:
        super().__init__(f"{message}\n{graph}")
        self.graph = graph


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def blocked_actor(rt: Runtime, actor: Actor) -> Blocked | None:
    """The Blocked record of one actor, None when it can act, is idle (nothing asked of it) or has ended."""
    if actor.state != "normal":
        return None
    reason = actor.blocked_reason()
    if reason is None or reason in IDLE:
        return None
    waits: list[Any] = []
    words: list[str] = []
    holds = actor.total_reading_cnt > 0
    standard = actor.ready_slots is not None  # the main job's actors have their own readiness
    for regst_id, slot in actor.readable.items():
        if slot:
            holds = True
        elif standard:
            producer = actor.producer_of[regst_id]
            waits.append(producer.task)  # a stand-in for another machine's actor has the real one's task
            words.append(f"register r{regst_id} from {producer.name}")
    for regst_id, slot in actor.writable.items():
        if slot:
            continue
        who, why = _not_returned(rt, actor, regst_id)
        waits += who
        words.append(why)
    if not standard or not words:
        words.insert(0, reason)
    tasks = {t.task_id: t for t in waits}
    return Blocked(actor.name, actor.actor_id, actor.task.machine_id, actor.task.thrd_id, actor.act_id,
                   "waits for " + "; ".join(words) if standard and words else "; ".join(words),
                   tuple(t.name for t in tasks.values()), holds, tuple(tasks), rt.plan.job_names[actor.task.job_id])


def _not_returned(rt: Runtime, actor: Actor, regst_id: int) -> tuple[list[Any], str]:
    """Which consumers keep every register of ``regst_id`` from coming back, in words. A register neither free
    nor in a consumer's slot was taken and never given back (a consumer that lost it)."""
    consumers = actor.consumers.get(regst_id, [])
    out = [r for r in rt.regsts.get(regst_id, ()) if r.reading_cnt > 0]
    holders = [c for c in consumers if any(_holds(c, regst_id, r) for r in out)]
    local = all(isinstance(c.readable.get(regst_id), deque) for c in consumers)
    free = actor.writable[regst_id]
    lost = [r for r in rt.regsts.get(regst_id, ()) if local and r not in free
            and not any(_holds(c, regst_id, r) for c in consumers)]
    tasks = [c.task for c in (holders or consumers)]
    why = f"a free register r{regst_id} (its consumers have not returned it: {', '.join(t.name for t in tasks)}"
    if lost:
        why += f"; r{regst_id}#{lost[0].index} was taken and never returned"
    return tasks, why + ")"


def _holds(consumer: Any, regst_id: int, regst: Any) -> bool:
    """Whether ``regst`` waits in the consumer's slot (never for a stand-in for another machine's actor)."""
    slot = consumer.readable.get(regst_id)
    return isinstance(slot, deque) and regst in slot


def find_cycle(blocked: tuple[Blocked, ...]) -> tuple[int, ...]:
    """A cycle of the wait-for graph among blocked actors (each waits for the next), () when there is none: the
    first one ``ir.graph.find_cycle`` finds, rotated to start at its first-listed actor."""
    cycle = cycle_of({b.actor_id: b.waits_on for b in blocked})
    if not cycle:
        return ()
    order = {b.actor_id: i for i, b in enumerate(blocked)}
    first = min(range(len(cycle)), key=lambda i: order[cycle[i]])
    return tuple(cycle[first:] + cycle[:first])


def recent_acts(rt: Runtime) -> list[str]:
    """The runtime's last acts, oldest first, as "name #act"."""
    actors = rt.actors
    return [f"{actors[i].name} #{n}" if i in actors else f"task{i} #{n}" for i, n in rt.recent]


def wait_graph(rt: Runtime, extra: tuple[Blocked, ...] = (), recent: dict[int, list[str]] | None = None,
               silent: tuple[str, ...] = ()) -> WaitGraph:
    """The wait-for graph of ``rt`` now (``extra``: other machines' blocked actors, ``recent`` their last acts,
    ``silent`` the machines that did not answer)."""
    rt.observe()
    blocked = tuple(b for a in rt.actors.values() if (b := blocked_actor(rt, a)) is not None) + extra
    here = next(iter(rt.actors.values())).task.machine_id if rt.actors else 0
    machines = {here: recent_acts(rt)}
    machines.update(recent or {})
    pending = sorted((i for name, q in rt.buffers.items() if name.startswith("CallbackNotifier-") for i in q),
                     key=lambda i: i.seq)
    return WaitGraph(blocked, find_cycle(blocked), machines, tuple(i.job_name for i in pending),
                     repr(rt.layer) if rt.layer is not None else "", silent)


def hang_error(rt: Runtime, what: str = "the runtime is idle but the awaited jobs have not finished") -> HangError:
    return HangError(what, rt.wait_graph())


def as_rows(graph: WaitGraph) -> list[tuple[Any, ...]]:
    """Blocked records as plain tuples (what a machine host sends the driver)."""
    return [dataclasses.astuple(b) for b in graph.blocked]
