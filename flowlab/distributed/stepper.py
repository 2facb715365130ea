"""Stepping a run on several Ray machines act by act, in one deterministic order: flow.debug's stepper.

``RayStepper`` is composed with a ``RayRuntime`` (the backend: machine 0's Runtime wired to the host actors) and
drives it; it overrides nothing of the Runtime. The driver orders everything: the hosts run no loops (they are
never ``start()``ed); each ``step()`` acts on one machine, chosen round-robin among the machines with a ready actor
(machine 0 first): machine 0's act is its Runtime's own ``step``, another machine's is its host's ``step``. What
that act sent to other machines stays *in flight* until the end of the next step (or until nothing else can act),
when it is delivered. So one act's registers are visibly between machines for one step: ``blocked_reason()`` of
their consumer says so, and ``in_flight()`` lists them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import FlowlabError
from ..runtime.actor import Actor
from ..runtime.events import ActEvent
from .errors import MachineError, MachineHangError
from .wiring import Batch

if TYPE_CHECKING:
    from .runtime import RayRuntime


class RayStepper:
    """flow.debug's ``Stepper`` (runtime/executor.py) over ``runtime``'s machines."""

    def __init__(self, runtime: RayRuntime) -> None:
        self.runtime = runtime
        self.flight: list[tuple[int, Batch]] = []  # (to machine, batch) sent and not yet delivered
        self.next_remote: dict[int, tuple[int, str] | None] = dict.fromkeys(runtime.hosts)  # machine -> next actor
        self.last_machine = -1
        for producer in runtime.remote_producers.values():
            producer.flight = self._flight_regsts  # blocked_reason() names registers in flight

    # -- what is between machines ----------------------------------------------------------------------
    def in_flight(self) -> list[str]:
        """The registers and register returns sent by the last act and not yet delivered, one line each."""
        out = []
        for to_machine, (sender, _, messages) in self.flight:
            for m in messages:
                if m[0] == "regst":
                    producer = self.runtime.plan.regst_descs[m[1]].producer_task_id
                    out.append(f"register r{m[1]} (piece {m[2]}, act {m[3]}) of {self._name(producer)} "
                               f"from machine {sender} to machine {to_machine}")
                elif m[0] == "return":
                    out.append(f"return of register r{m[1]} from machine {sender} to machine {to_machine}")
        return out

    def _flight_regsts(self) -> set[int]:
        return {m[1] for to, (_, _, ms) in self.flight if to == 0 for m in ms if m[0] == "regst"}

    def _name(self, task_id: int) -> str:
        rt = self.runtime
        actor = rt.actors.get(task_id) or rt.remote_actors[task_id]
        return actor.name

    # -- the order --------------------------------------------------------------------------------------
    def _candidates(self) -> list[int]:
        ready = [0] if self.runtime.peek() is not None else []
        ready += [m for m, nxt in self.next_remote.items() if nxt is not None]
        return ready

    def _pick(self) -> int | None:
        ready = self._candidates()
        if not ready and self.flight:
            self._deliver()
            ready = self._candidates()
        if not ready:
            return None
        after = [m for m in ready if m > self.last_machine]
        return after[0] if after else ready[0]

    def _deliver(self) -> None:
        rt = self.runtime
        flight, self.flight = self.flight, []
        by_machine: dict[int, list[Batch]] = {}
        for to_machine, batch in flight:
            by_machine.setdefault(to_machine, []).append(batch)
        for to_machine, batches in by_machine.items():
            if to_machine == 0:
                for batch in batches:
                    rt.inbox.apply(batch)
            else:
                self.next_remote[to_machine] = self._call(to_machine, rt.hosts[to_machine].apply.remote(batches))

    def _call(self, machine: int, ref: Any) -> Any:
        rt = self.runtime
        ray = rt._ray
        try:
            return ray.get(ref, timeout=rt.stall_s)
        except ray.exceptions.RayActorError:
            rt.shutdown("a machine died while stepping")
            raise MachineError(f"{rt.machine_name(machine)} died while stepping; the other machines were "
                               "stopped") from None
        except ray.exceptions.GetTimeoutError:
            raise MachineHangError(f"{rt.machine_name(machine)} did not answer a step within {rt.stall_s:.0f} s "
                                   "(FLOWLAB_MACHINE_TIMEOUT); check that its Ray node is alive (`ray status`)",
                                   rt.wait_graph()) from None

    def peek(self, thread: int | tuple[int, int] | None = None) -> Actor | None:
        _one_thread_only(thread)
        machine = self._pick()
        if machine is None:
            return None
        if machine == 0:
            return self.runtime.peek()
        task_id, _ = self.next_remote[machine]  # type: ignore[misc]
        return self.runtime.remote_actors[task_id]

    def step(self, thread: int | tuple[int, int] | None = None) -> ActEvent | None:
        _one_thread_only(thread)
        rt = self.runtime
        if rt.stopped:
            raise MachineError(rt.stopped)
        machine = self._pick()
        if machine is None:
            return None
        earlier, self.flight = self.flight, []
        if machine == 0:
            event = rt.step(True)
            sent = rt.link.take()
        else:
            event, sent, self.next_remote[machine] = self._call(machine, rt.hosts[machine].step.remote())
            if isinstance(event, dict):  # the host's kernel raised: its report
                rt.shutdown("a machine failed while stepping")
                where = f" in task {event['task']!r} (op {event['op']!r})" if event.get("task") else ""
                raise MachineError(f"{rt.machine_name(machine)} failed{where}: {event['type']}: "
                                   f"{event['message']}; the other machines were stopped")
            if event is not None:
                event.executor = rt.executor  # the host stepped it as a plain Runtime: name this one's
                for hook in rt.hooks:
                    hook(event)
        self.last_machine = machine
        self.flight = earlier
        self._deliver()  # what the act before sent arrives now
        self.flight = [(to, batch) for to, batch in sent]
        return event  # type: ignore[return-value]  # Runtime.step(True): an event or None


def _one_thread_only(thread: int | tuple[int, int] | None) -> None:
    if thread is not None:
        raise FlowlabError(f"stepping one chosen thread ({thread!r}) is not supported on Ray machines: a step acts on "
                           "the next machine in the fixed rotation; step without thread=")
