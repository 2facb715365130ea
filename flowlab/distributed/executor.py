"""The Ray executor: protocol stepping over a Plan's machines, machine 0 here and the others in Ray actors.

The machines are a backend (``RayRuntime``: machine 0's runtime wired to the host actors); this is the loop that
runs a call over them (flow.debug steps them with a RayStepper instead: stepper.py). The executor starts the hosts'
loops; a call launches its job instances here, acts locally until nothing is ready, hands what it sent to the other
machines to Ray (fire-and-forget), and waits for the first of: batches from other machines (each host's ``take``
long poll), a host failing, a host dying. Each act is machine 0's ``Runtime.step``, so a
subscriber sees it (``ActEvent.executor`` is "ray").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..runtime.executor import NO_ENTRIES, Call
from ..runtime.runtime import Runtime, RuntimeIdle
from .errors import MachineError, MachineHangError
from .runtime import CLOSE_S, POLL_S, RayRuntime, _first_line


class RayExecutor:
    """Runs the session's calls over ``runtime``'s machines; a failed call stops them (their state cannot be put
    back: the session's next runtime is a StoppedExecutor)."""

    name = "ray"
    entries = NO_ENTRIES

    def __init__(self, runtime: RayRuntime) -> None:
        self.runtime = runtime
        # Each host runs its machine's acts on a loop of its own (a RayStepper would drive them instead)
        hosts = runtime.hosts
        runtime._get([h.start.remote() for h in hosts.values()], list(hosts), "start its loop")

    def run(self, call: Call) -> None:
        rt = self.runtime
        if call.guard is not None:
            call.guard(None)
        if rt.stopped:
            raise MachineError(rt.stopped)
        for instance in call.instances:
            rt.launch(instance)
        last = call.instances[-1]
        try:
            self._run(lambda: last.finished)
        except BaseException as err:
            rt.shutdown(f"the machines of this session were stopped after a failed call ({type(err).__name__}: "
                        f"{err}); call flow.clear_default_session() and run the job functions again")
            raise

    def _run(self, done: Callable[[], bool]) -> None:
        step, flush = self.runtime.step, self._flush
        while True:
            while step(False) is not None:
                pass
            flush()  # once idle: fewer, larger messages (each is a Ray call, ~1 ms on a loaded box)
            if done():
                return
            self._wait_remote()

    def _flush(self) -> None:
        rt = self.runtime
        for to_machine, batch in rt.link.take():
            rt.hosts[to_machine].deliver.remote(batch)

    def _wait_remote(self) -> None:
        """Wait for batches from other machines, or a fault; apply the batches."""
        rt = self.runtime
        ray, takes, watches = rt._ray, rt._takes, rt.watches
        polled = set(takes.values())
        for m, host in rt.hosts.items():
            if m not in polled and m in watches.values():  # not after its fault
                takes[host.take.remote(POLL_S)] = m
        t0 = time.perf_counter()
        ready, _ = ray.wait([*takes, *watches], num_returns=1, timeout=rt.stall_s)
        rt.wait_s += time.perf_counter() - t0
        rt.waits += 1
        if not ready:
            raise MachineHangError(f"no machine made progress for {rt.stall_s:.0f} s (FLOWLAB_MACHINE_TIMEOUT)",
                                   rt.wait_graph())
        ref = ready[0]
        if ref in takes:
            machine = takes.pop(ref)
            try:
                batches = ray.get(ref)
            except ray.exceptions.RayActorError:  # it died while polled: say so as its watch would
                self._raise_fault(machine, ref)
            for batch in batches:
                rt.inbox.apply(batch)
            return
        machine = watches.pop(ref)
        self._raise_fault(machine, ref)

    def _raise_fault(self, machine: int, ref: Any) -> None:
        rt = self.runtime
        ray = rt._ray
        name = rt.machine_name(machine)
        try:
            report = ray.get(ref)
        except ray.exceptions.RayActorError as err:
            raise MachineError(f"{name} died (its Ray actor exited: {_first_line(err)}); the other machines were "
                               "stopped") from None
        if report is None:
            raise MachineError(f"{name} stopped while a call was running")
        where = (f" in task {report['task']!r} (op {report['op']!r}, job {report['job']!r})"
                 if report.get("task") else "")
        raise MachineError(f"{name} failed{where}: {report['type']}: {report['message']}; the other machines were "
                           f"stopped\n--- on {name} ---\n{report['traceback']}")

    def close(self) -> None:
        """EORD across machines: the hosts close when told, then this machine's actors wind down."""
        rt = self.runtime
        if rt.stopped:
            return
        rt.stall_s = min(rt.stall_s, CLOSE_S)
        try:
            for m, host in rt.hosts.items():
                host.deliver.remote((0, rt.link.seq[m], [("close",)]))
                rt.link.seq[m] += 1
            rt.closed = True
            rt.wait_actor.update_state()
            self._run(lambda: all(a.state == "done" for a in rt.actors.values()))
        except (MachineError, RuntimeIdle):
            pass  # the session is closing: what could not wind down is stopped below
        finally:
            rt.shutdown("the session's machines were stopped when it closed")

    def shutdown(self) -> None:
        self.runtime.shutdown("the session's machines were stopped when it closed")

    def __str__(self) -> str:
        rt = self.runtime
        machines = ", ".join(rt.machine_name(m) for m in [0, *rt.machines])
        state = f"stopped: {rt.stopped}" if rt.stopped else f"{rt._seq} acts on machine 0"
        return f"ray: protocol stepping over {machines} ({state})"

    def __repr__(self) -> str:
        return f"<RayExecutor {len(self.runtime.machines) + 1} machines>"


class StoppedExecutor:
    """What a multi-machine session runs after a cancelled call: the other machines' registers and variables
    cannot be put back, so every call says to clear the session."""

    name = "ray"
    entries = NO_ENTRIES

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def run(self, call: Call) -> None:
        raise MachineError("the machines of this session were stopped after a failed call; call "
                           "flow.clear_default_session() and run the job functions again")

    def close(self) -> None:
        self.runtime.closed = True

    def shutdown(self) -> None:
        pass  # the machines were stopped with the failed call

    def __str__(self) -> str:
        return "ray: stopped after a failed call (flow.clear_default_session() starts again)"
