"""Executors: what runs a call's launched job instances. One protocol, one implementation per rung of the ladder.

The session makes one executor from its ExecutionPolicy (policy.py) when it starts its runtime and hands it every
call: ``executor.run(call)``, nothing else. Each executor is a lowering of the same semantics, protocol stepping
(``Runtime.step``, what flow.debug drives), proven equal to it:

    ProtocolExecutor   protocol stepping in this process, on one scheduler thread or one OS thread per Plan thread
    ReplayExecutor     replay of captured Schedules, fused or on lanes (flowlab/replay/executor.py)
    CallgenExecutor    a generated call per job function over the replay executor (flowlab/call_path.py)
    RayExecutor        protocol stepping over the Plan's machines as Ray processes (flowlab/distributed/executor.py)

Every executor prints what it is (``str``) and names itself (``name``); the act events of the calls it runs name
it too (``ActEvent.executor``).

flow.debug does not run calls: it steps one, act by act, through a ``Stepper`` the backend gives
(``Runtime.stepper()``): ``ProtocolStepper`` here, ``distributed.RayStepper`` over Ray machines. No backend
overrides the act loop (tests/project/test_act_loop.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .actor import Actor
    from .events import ActEvent
    from .job_instance import JobInstance
    from .runtime import Runtime


class Call:
    """One job call as an executor runs it: its instances (pushes, the job, pulls), their job names (``key``),
    the guard to call before its first act with the variables a failure could leave half-written (None: every
    variable the call writes), and the job function it is a call of (``desc``, for an executor that learns per
    function: callgen)."""

    __slots__ = ("desc", "guard", "instances", "key")

    def __init__(self, instances: list[JobInstance], key: tuple[str, ...] | None = None,
                 guard: Callable[[tuple[str, ...] | None], None] | None = None, desc: Any = None) -> None:
        self.instances = instances
        self.key = key or tuple(i.job_name for i in instances)
        self.guard = guard
        self.desc = desc


NO_ENTRIES: Mapping[int, Callable[[tuple[Any, ...], dict[str, Any]], Any]] = MappingProxyType({})


class Executor(Protocol):
    """What runs a session's calls. ``run`` performs one call to its end (the runtime idle again) or raises;
    ``close`` ends the runtime (EORD); ``shutdown`` lets go of what it holds beyond the runtime (machine
    processes, generated calls holding the session), after ``close`` or instead of it, any number of times;
    ``runtime`` is the protocol state every executor keeps exact.
    ``entries``: job functions whose calls the executor takes whole from their arguments, by ``id(desc)``
    (callgen's generated calls; each runs the session's general path itself for a call it does not take)."""

    name: str
    runtime: Runtime
    entries: Mapping[int, Callable[[tuple[Any, ...], dict[str, Any]], Any]]

    def run(self, call: Call) -> None: ...

    def close(self) -> None: ...

    def shutdown(self) -> None: ...


class ProtocolExecutor:
    """Protocol stepping: launch, act until the last instance finished, then until idle (``Runtime.run_protocol``);
    on the Plan's threads, one OS thread each, when the runtime has them (the ``threads`` rung)."""

    entries = NO_ENTRIES

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.name = "threads" if runtime.threads is not None else "protocol"
        runtime.executor = self.name  # what its act events name (events.act_event)

    def run(self, call: Call) -> None:
        if call.guard is not None:
            call.guard(None)
        self.runtime.run_protocol(call.instances)

    def close(self) -> None:
        self.runtime.close()

    def shutdown(self) -> None:
        pass  # nothing beyond the runtime

    def __str__(self) -> str:
        how = "one OS thread per Plan thread" if self.name == "threads" else "one scheduler thread"
        return f"{self.name}: protocol stepping, {how} ({self.runtime.seq} acts so far)"

    def __repr__(self) -> str:
        return f"<ProtocolExecutor {self.name}>"


class Stepper(Protocol):
    """What flow.debug drives, one act at a time, over ``runtime`` (whose launched instances it steps). ``peek``:
    the actor the next ``step`` acts, None when none can; ``step``: perform that act and return its event (None
    when none can act). ``thread`` (a ``thrd_id`` or ``(machine_id, thrd_id)``): only that Plan thread's next act."""

    runtime: Runtime

    def peek(self, thread: int | tuple[int, int] | None = None) -> Actor | None: ...

    def step(self, thread: int | tuple[int, int] | None = None) -> ActEvent | None: ...


class ProtocolStepper:
    """Protocol stepping in this process: ``Runtime.step``/``peek`` themselves (what every executor is proven
    equal to)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def peek(self, thread: int | tuple[int, int] | None = None) -> Actor | None:
        return self.runtime.peek(thread)

    def step(self, thread: int | tuple[int, int] | None = None) -> ActEvent | None:
        return self.runtime.step(True, thread)  # type: ignore[return-value]  # record=True: an event or None


__all__ = ["NO_ENTRIES", "Call", "Executor", "ProtocolExecutor", "ProtocolStepper", "Stepper"]
