"""Stepping a run on several Ray machines act by act, in one deterministic order (the debugger's runtime).

The driver orders everything: the hosts do not run loops (``connect(stepping=True)``); each ``step()`` acts on one
machine, chosen round-robin among the machines with a ready actor (machine 0 first), and what that act sent to
other machines stays *in flight* until the end of the next step (or until nothing else can act), when it is
delivered. So one act's registers are visibly between machines for one step: ``blocked_reason()`` of their
consumer says so, and ``in_flight()`` lists them.
"""

from __future__ import annotations

from typing import Any

from ..errors import FlowlabError
from ..runtime.actor import Actor
from ..runtime.events import ActEvent
from .runtime import MachineError, MachineHangError, RayRuntime
from .wiring import Batch


class SteppingRayRuntime(RayRuntime):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["stepping"] = True
        super().__init__(*args, **kwargs)
        self.flight: list[tuple[int, Batch]] = []  # (to machine, batch) sent and not yet delivered
        self.next_remote: dict[int, tuple[int, str] | None] = dict.fromkeys(self.hosts)  # machine -> next actor
        self.last_machine = -1
        for producer in self.remote_producers.values():  # type: ignore[attr-defined]
            producer.flight = self._flight_regsts  # blocked_reason() names registers in flight

    # -- what is between machines ----------------------------------------------------------------------
    def in_flight(self) -> list[str]:
        out = []
        for to_machine, (sender, _, messages) in self.flight:
            for m in messages:
                if m[0] == "regst":
                    producer = self.plan.regst_descs[m[1]].producer_task_id
                    out.append(f"register r{m[1]} (piece {m[2]}, act {m[3]}) of {self._name(producer)} "
                               f"from machine {sender} to machine {to_machine}")
                elif m[0] == "return":
                    out.append(f"return of register r{m[1]} from machine {sender} to machine {to_machine}")
        return out

    def _flight_regsts(self) -> set[int]:
        return {m[1] for to, (_, _, ms) in self.flight if to == 0 for m in ms if m[0] == "regst"}

    def _name(self, task_id: int) -> str:
        actor = self.actors.get(task_id) or self.remote_actors[task_id]  # type: ignore[attr-defined]
        return actor.name

    # -- the order --------------------------------------------------------------------------------------
    def _candidates(self) -> list[int]:
        ready = [0] if super().peek() is not None else []
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
        flight, self.flight = self.flight, []
        by_machine: dict[int, list[Batch]] = {}
        for to_machine, batch in flight:
            by_machine.setdefault(to_machine, []).append(batch)
        for to_machine, batches in by_machine.items():
            if to_machine == 0:
                for batch in batches:
                    self.inbox.apply(batch)
            else:
                self.next_remote[to_machine] = self._call(to_machine, self.hosts[to_machine].apply.remote(batches))

    def _call(self, machine: int, ref: Any) -> Any:
        ray = self._ray
        try:
            return ray.get(ref, timeout=self.stall_s)
        except ray.exceptions.RayActorError:
            self.shutdown("a machine died while stepping")
            raise MachineError(f"{self.machine_name(machine)} died while stepping; the other machines were "
                               "stopped") from None
        except ray.exceptions.GetTimeoutError:
            raise MachineHangError(f"{self.machine_name(machine)} did not answer a step within {self.stall_s:.0f} s "
                                   "(FLOWLAB_MACHINE_TIMEOUT); check that its Ray node is alive (`ray status`)",
                                   self.wait_graph()) from None

    def peek(self, thread: int | tuple[int, int] | None = None) -> Actor | None:
        _one_thread_only(thread)
        machine = self._pick()
        if machine is None:
            return None
        if machine == 0:
            return super().peek()
        task_id, _ = self.next_remote[machine]  # type: ignore[misc]
        return self.remote_actors[task_id]  # type: ignore[attr-defined,no-any-return]

    def step(self, record: bool = True, thread: int | tuple[int, int] | None = None) -> ActEvent | bool | None:
        _one_thread_only(thread)
        if self.stopped:
            raise MachineError(self.stopped)
        machine = self._pick()
        if machine is None:
            return None
        earlier, self.flight = self.flight, []
        if machine == 0:
            event = super().step(True)
            sent = self.link.take()
        else:
            event, sent, self.next_remote[machine] = self._call(machine, self.hosts[machine].step.remote())
            if isinstance(event, dict):  # the host's kernel raised: its report
                self.shutdown("a machine failed while stepping")
                where = f" in task {event['task']!r} (op {event['op']!r})" if event.get("task") else ""
                raise MachineError(f"{self.machine_name(machine)} failed{where}: {event['type']}: "
                                   f"{event['message']}; the other machines were stopped")
            if event is not None:
                event.executor = self.executor  # the host stepped it as a plain Runtime: name this one's
                for hook in self.hooks:
                    hook(event)
        self.last_machine = machine
        self.flight = earlier
        self._deliver()  # what the act before sent arrives now
        self.flight = [(to, batch) for to, batch in sent]
        return event

    def load_variables(self, pieces: dict[str, Any]) -> None:
        """Give every machine the session's variable values: each task's own piece (``session.variables()``)."""
        per_machine: dict[int, dict[int, dict[str, Any]]] = {}
        for task in self.plan.tasks:
            op = task.exec_sequence[0] if task.exec_sequence else None
            if task.machine_id == 0 or op is None or op.op_type != "variable" or task.is_boxing:
                continue
            if op.name in pieces:
                rid = next(iter(task.produced_regst_desc.values())).regst_desc_id
                value = pieces[op.name].arrays[max(task.parallel_id, 0)]
                per_machine.setdefault(task.machine_id, {})[rid] = {op.output_lbns[0]: value}
        self._get([self.hosts[m].set_registers.remote(v) for m, v in per_machine.items()], list(per_machine),
                  "take its variables")


def _one_thread_only(thread: int | tuple[int, int] | None) -> None:
    if thread is not None:
        raise FlowlabError(f"stepping one chosen thread ({thread!r}) is not supported on Ray machines: a step acts on "
                           "the next machine in the fixed rotation; step without thread=")
