"""Observing a runtime: its event sink (``Runtime.sink``) and the events built for it.

Observation is a sink, not a path (ARCHITECTURE.md, "The run path"): every act, whoever asks for it
(``Runtime.step``, a protocol call's ``Runtime._run_to_idle``, an OS thread of parallel run mode), happens in the
one act loop ``Runtime.acts``, which reports it to ``runtime.sink`` when one is attached. With none (``sink is
None``, nobody listens) an act pays ``is not None`` tests: it builds no record of what it moved and no event.

``runtime.hooks`` is the public way to listen: a list of callables, each handed an ``ActEvent`` per act; appending
the first attaches a ``Subscribers`` sink, removing the last detaches it (``HookList``). Listening does not change
which executor runs a call: a replayed call's events are built from its captured Schedule after it ran (the same
acts, registers, act ids and sequence numbers as the protocol's, ``executor`` naming the replay executor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from .actor import Actor, Moved
    from .runtime import Runtime


@dataclass(slots=True)
class ActEvent:
    seq: int  # position in the run (0, 1, 2, ...)
    actor_id: int  # = task_id
    actor_name: str
    task_type: str
    job_id: int
    act_id: int  # this actor's act counter
    read: tuple[tuple[int, int], ...]  # (regst_desc_id, register index) consumed
    written: tuple[tuple[int, int], ...]  # (regst_desc_id, register index) produced
    # which kernel ran the act: "reference" or "numba" (a tiered kernel says which tier it was on); None for an
    # act with no op kernel (system actors, boxing, copies)
    tier: str | None = None
    # which executor performed the act (runtime/executor.py): "protocol" or "threads" (stepping in this process),
    # "ray" (stepping on Ray machine processes), or the replay executors ("replay", "fused", "lanes", "callgen"),
    # whose events are built from the call's captured Schedule once the call ran
    executor: str = "protocol"

    def __str__(self) -> str:
        read = ",".join(f"r{r}" for r, _ in self.read)
        written = ",".join(f"r{r}" for r, _ in self.written)
        tier = f" [{self.tier}]" if self.tier else ""
        return f"#{self.seq} {self.actor_name} act {self.act_id}{tier} read[{read}] wrote[{written}]"


class EventSink(Protocol):
    """Where acts are reported: ``acted`` is called once per act, after the runtime's bookkeeping of it (its
    sequence number, the ready queue), with the registers it moved. It returns the ActEvent it built, if any.
    ``replayed`` is handed the events of a call an executor performed without acting (a replay), built from its
    Schedule once the call ran, in act order."""

    def acted(self, rt: Runtime, actor: Actor, seq: int, moved: Moved) -> ActEvent | None: ...

    def replayed(self, event: ActEvent) -> None: ...


def act_event(rt: Runtime, actor: Actor, seq: int, moved: Moved) -> ActEvent:
    """The event of one act, built only for someone who looks at it."""
    kernel = actor.kernel
    stream = kernel.stream if kernel is not None else None
    if stream is not None:  # a GPU act someone looks at: its work is done before anything reads its registers
        stream.synchronize()
    task = actor.task
    read, written = moved
    return ActEvent(seq, actor.actor_id, actor.name, task.task_type, task.job_id, actor.act_id,
                    tuple(read), tuple(written), rt.tier_of(actor), rt.executor)


class EventOnly:
    """The sink of ``step()`` asked for its event with nobody else listening: builds it, tells no one."""

    __slots__ = ()

    def acted(self, rt: Runtime, actor: Actor, seq: int, moved: Moved) -> ActEvent:
        return act_event(rt, actor, seq, moved)

    def replayed(self, event: ActEvent) -> None:
        pass


EVENT_ONLY = EventOnly()


class Subscribers:
    """The sink of ``runtime.hooks``: one ActEvent per act, handed to each subscriber in order."""

    __slots__ = ("hooks",)

    def __init__(self, hooks: list[Callable[[ActEvent], None]]) -> None:
        self.hooks = hooks

    def acted(self, rt: Runtime, actor: Actor, seq: int, moved: Moved) -> ActEvent:
        event = act_event(rt, actor, seq, moved)
        for hook in self.hooks:
            hook(event)
        return event

    def replayed(self, event: ActEvent) -> None:
        for hook in self.hooks:
            hook(event)

    def __repr__(self) -> str:
        return f"<Subscribers {self.hooks!r}>"


class HookList(list):
    """``runtime.hooks``: a list of subscribers that keeps ``runtime.sink`` in step with it (a ``Subscribers``
    sink while it holds any, None once empty), so the act loops ask one attribute, not the list's length."""

    def __init__(self, rt: Runtime, hooks: Iterable[Callable[[ActEvent], None]] = ()) -> None:
        super().__init__(hooks)
        self._rt = rt
        self._sync()

    def _sync(self) -> None:
        rt = self._rt
        if self and not isinstance(rt.sink, Subscribers):
            rt.sink = Subscribers(self)
        elif not self and isinstance(rt.sink, Subscribers):
            rt.sink = None


def _syncing(name: str) -> Any:
    """``list.<name>``, then ``HookList._sync``: a mutator of the subscribers' list that keeps the sink in step."""
    base = getattr(list, name)

    def method(self: HookList, *args: Any) -> Any:
        result = base(self, *args)
        self._sync()
        return result  # (``+=`` and ``*=`` return the list itself, as list's do)

    method.__name__ = method.__qualname__ = name
    return method


for _name in ("append", "extend", "insert", "remove", "pop", "clear", "__setitem__", "__delitem__", "__iadd__",
              "__imul__"):
    setattr(HookList, _name, _syncing(_name))
del _name


class RuntimeIdle(RuntimeError):
    """The scheduler has nothing left to do, but what it was asked to wait for has not happened."""


__all__ = ["EVENT_ONLY", "ActEvent", "EventSink", "HookList", "RuntimeIdle", "Subscribers", "act_event"]
