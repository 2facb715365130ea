"""Machine 0 in the user's process, the other machines in Ray actors: ``RayRuntime`` is the Session's Runtime.

The driver runs machine 0's actors (push, pull, main jobs and machine 0's compute, as OneFlow's master does);
``MachineHost`` actors run the others. A call launches its job instances here, acts locally until nothing is
ready, hands what it sent to the other machines to Ray (fire-and-forget), and waits for the first of: batches
from other machines (each host's ``take`` long poll), a host failing, a host dying. ``stepping=True`` (the
debugger) instead orders every act and every delivery from the driver: see ``stepping.py``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..errors import FlowlabError
from ..flags import get
from ..ir import Plan
from ..runtime.hang import Blocked, HangError, WaitGraph, wait_graph
from ..runtime.job_instance import JobInstance
from ..runtime.runtime import Runtime, RuntimeIdle
from .cluster import import_ray, remote_host_class
from .wiring import Inbox, Link, localize

START_TIMEOUT_S = 120.0  # host actors start and compile their kernels (Numba's cache makes it seconds)
CLOSE_S = 10.0  # closing waits at most this long for the other machines to wind down, then stops them
KILL_WAIT_S = 5.0  # shutdown waits at most this long for killed hosts to be gone
ASK_S = 5.0  # how long a diagnosis (why_stuck, a HangError) waits for each other machine's answer
POLL_S = 2.0  # a host's take() wait: returns at once when a batch arrives; a fault ends the wait through its watch


class MachineError(FlowlabError, RuntimeError):
    """A machine of a multi-machine run failed or died; the call is cancelled and the other machines stopped."""


class MachineHangError(MachineError, HangError):
    """No machine made progress for FLOWLAB_MACHINE_TIMEOUT seconds: ``graph`` has every machine's blocked actors
    (a machine that did not answer is listed in ``graph.silent``) and each machine's last acts."""


class RayRuntime(Runtime):
    executor = "ray"  # its act events (flow.debug steps it, or a subscriber watches a call) name the Ray machines
    remote = True  # the machines' actors and variables are in their processes (Runtime's declared capabilities)

    def __init__(self, plan: Plan, kernel_impl: str | None = None, arenas: dict[int, np.ndarray] | None = None,
                 addresses: tuple[str, ...] = (), stepping: bool = False) -> None:
        super().__init__(plan, kernel_impl, arenas=arenas)
        self.link = Link(0)
        localize(self, 0, self.link)
        self.inbox = Inbox(self)
        self.addresses = addresses
        self.stepping = stepping
        self.stall_s = get("machine_timeout")
        self.machines = sorted({t.machine_id for t in plan.tasks if t.machine_id != 0})
        self.hosts: dict[int, Any] = {}
        self.stopped: str | None = None
        self._takes: dict[Any, int] = {}  # a pending take() call -> its machine
        self.wait_s = 0.0  # time the driver spent waiting for other machines (the benchmark's breakdown)
        self.waits = 0
        ray = self._ray = import_ray()
        host_cls = remote_host_class()
        gpus = ray.cluster_resources().get("GPU", 0)
        for m in self.machines:
            n_gpu = _gpu_count(plan, m)
            options: dict[str, Any] = {"resources": {f"machine{m}": 0.001}, "max_concurrency": 8}
            if n_gpu and gpus >= n_gpu:  # 'gpu' placements run on the CPU where the cluster has no GPU
                options["num_gpus"] = n_gpu
            self.hosts[m] = host_cls.options(**options).remote(plan, m, kernel_impl)
        try:
            ray.get([h.connect.remote(self.hosts, stepping) for h in self.hosts.values()],
                    timeout=START_TIMEOUT_S)
        except Exception as err:
            self.shutdown()
            names = ", ".join(self.machine_name(m) for m in self.machines)
            raise MachineError(f"the machine actors of {names} did not start within {START_TIMEOUT_S:.0f} s "
                               f"({type(err).__name__}: {_first_line(err)}); check that each machine's Ray node "
                               "is alive (`ray status` lists its resource machine<i>) and has a free CPU slot for "
                               "an actor process") from err
        self.watches = {h.watch.remote(): m for m, h in self.hosts.items()}

    def machine_name(self, m: int) -> str:
        return f"machine {m}" + (f" ({self.addresses[m]})" if m < len(self.addresses) else "")

    # -- run mode ------------------------------------------------------------------------------------
    def run_call(self, instances: list[JobInstance], key: tuple[str, ...] | None = None, guard: Any = None) -> None:
        if guard is not None:
            guard(None)
        self.run_protocol(instances)

    def run_protocol(self, instances: list[JobInstance]) -> None:
        if self.stopped:
            raise MachineError(self.stopped)
        for instance in instances:
            self.launch(instance)
        last = instances[-1]
        try:
            self._run(lambda: last.finished)
        except BaseException as err:
            self.shutdown(f"the machines of this session were stopped after a failed call ({type(err).__name__}: "
                          f"{err}); call flow.clear_default_session() and run the job functions again")
            raise

    def _run(self, done: Any) -> None:
        step = self.step
        while True:
            while step(False) is not None:
                pass
            self._flush()  # once idle: fewer, larger messages (each is a Ray call, ~1 ms on a loaded box)
            if done():
                return
            self._wait_remote()

    def _flush(self) -> None:
        for to_machine, batch in self.link.take():
            self.hosts[to_machine].deliver.remote(batch)

    def _wait_remote(self) -> None:
        """Wait for batches from other machines, or a fault; apply the batches."""
        ray = self._ray
        polled = set(self._takes.values())
        for m, host in self.hosts.items():
            if m not in polled and m in self.watches.values():  # not after its fault
                self._takes[host.take.remote(POLL_S)] = m
        t0 = time.perf_counter()
        ready, _ = ray.wait([*self._takes, *self.watches], num_returns=1, timeout=self.stall_s)
        self.wait_s += time.perf_counter() - t0
        self.waits += 1
        if not ready:
            raise MachineHangError(f"no machine made progress for {self.stall_s:.0f} s (FLOWLAB_MACHINE_TIMEOUT)",
                                   self.wait_graph())
        ref = ready[0]
        if ref in self._takes:
            machine = self._takes.pop(ref)
            try:
                batches = ray.get(ref)
            except ray.exceptions.RayActorError:  # it died while polled: say so as its watch would
                self._raise_fault(machine, ref)
            for batch in batches:
                self.inbox.apply(batch)
            return
        machine = self.watches.pop(ref)
        self._raise_fault(machine, ref)

    def _raise_fault(self, machine: int, ref: Any) -> None:
        ray = self._ray
        name = self.machine_name(machine)
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

    # -- closing -------------------------------------------------------------------------------------
    def close(self) -> None:
        """EORD across machines: the hosts close when told, then this machine's actors wind down."""
        if self.stopped:
            return
        self.stall_s = min(self.stall_s, CLOSE_S)
        try:
            for m, host in self.hosts.items():
                host.deliver.remote((0, self.link.seq[m], [("close",)]))
                self.link.seq[m] += 1
            self.closed = True
            self.wait_actor.update_state()
            self._run(lambda: all(a.state == "done" for a in self.actors.values()))
        except (MachineError, RuntimeIdle):
            pass  # the session is closing: what could not wind down is stopped below
        finally:
            self.shutdown("the session's machines were stopped when it closed")

    def shutdown(self, why: str = "stopped") -> None:
        """Stop every host (idempotent)."""
        if self.stopped:
            return
        self.stopped = why
        ray = self._ray
        for actor in self.hosts.values():
            try:
                ray.kill(actor)
            except Exception:  # already gone
                pass
        # ray.kill is asynchronous: a call made right after it may still be answered. Return only once every host
        # is gone (or after KILL_WAIT_S), so "the other machines were stopped" is true when the caller reads it.
        alive, deadline = list(self.hosts.values()), time.monotonic() + KILL_WAIT_S
        while alive and time.monotonic() < deadline:
            pings = [h.counters.remote() for h in alive]
            ray.wait(pings, num_returns=len(pings), timeout=max(0.0, deadline - time.monotonic()))
            still = []
            for host, ping in zip(alive, pings, strict=True):
                try:
                    ray.get(ping, timeout=0)
                    still.append(host)
                except ray.exceptions.RayActorError:
                    pass
                except Exception:  # no answer yet: not gone either
                    still.append(host)
            alive = still
            if alive:
                time.sleep(0.02)

    def wait_graph(self) -> WaitGraph:
        """The wait-for graph across machines: this one's actors, then every other machine's (asked with a short
        timeout; one that does not answer is named in ``silent``)."""
        extra: list[Blocked] = []
        recent: dict[int, list[str]] = {}
        silent: list[str] = []
        if not self.stopped:
            for m, host in self.hosts.items():
                try:
                    rows, acts = self._ray.get(host.wait_rows.remote(), timeout=ASK_S)
                except Exception as err:  # a dead or stuck machine says so instead
                    silent.append(f"{self.machine_name(m)} ({type(err).__name__})")
                    continue
                extra += [Blocked(*row) for row in rows]
                recent[m] = acts
        return wait_graph(self, tuple(extra), recent, tuple(silent))

    def describe_blocked(self) -> str:
        """Why this machine's actors wait, then every other machine's (asked with a short timeout)."""
        lines = [super().describe_blocked()]
        if not self.stopped:
            for m, host in self.hosts.items():
                try:
                    rows = self._ray.get(host.actor_rows.remote(), timeout=ASK_S)
                except Exception as err:  # a dead or stuck machine says so instead
                    lines.append(f"  {self.machine_name(m)}: no answer ({type(err).__name__})")
                    continue
                lines += [f"  {name} ({self.machine_name(m)}): {why}" for _, name, state, why in rows
                          if why and why != "done" and "waiting for a job" not in why]
        return "\n".join(lines)

    def fetch_variables(self) -> None:
        """Copy the other machines' variable registers into this process's (which ``session.variables()`` reads:
        a split variable's pieces live on several machines)."""
        if self.stopped or not self.hosts:
            return
        machines = list(self.hosts)
        fetched = self._get([self.hosts[m].variable_registers.remote() for m in machines], machines,
                            "send its variables")
        for registers in fetched:
            for rid, blobs in registers.items():
                for lbn, value in blobs.items():
                    self.regsts[rid][0].blobs[lbn][...] = value

    def push_variables(self) -> None:
        """Send this process's copies of the other machines' variable registers to them (after
        ``flow.load_variables`` wrote every piece here)."""
        if self.stopped or not self.hosts:
            return
        per_machine: dict[int, dict[int, dict[str, np.ndarray]]] = {}
        for actor in self.remote_actors.values():  # type: ignore[attr-defined]
            op = actor.task.exec_sequence[0] if actor.task.exec_sequence else None
            if op is not None and op.op_type == "variable" and not actor.task.is_boxing:
                rid = next(iter(actor.writable))
                per_machine.setdefault(actor.task.machine_id, {})[rid] = dict(self.regsts[rid][0].blobs)
        self._get([self.hosts[m].set_registers.remote(v) for m, v in per_machine.items()], list(per_machine),
                  "take its variables")

    def _get(self, refs: list[Any], machines: list[int], what: str) -> list[Any]:
        """``ray.get`` bounded by FLOWLAB_MACHINE_TIMEOUT: a machine that never answers is a MachineError naming
        it, not a wait without end."""
        try:
            return self._ray.get(refs, timeout=self.stall_s)
        except self._ray.exceptions.GetTimeoutError:
            ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=0)
            late = ", ".join(self.machine_name(m) for m, r in zip(machines, refs, strict=True) if r not in ready)
            raise MachineError(f"{late} did not {what} within {self.stall_s:.0f} s (FLOWLAB_MACHINE_TIMEOUT); "
                               "check that its Ray node is alive (`ray status`)") from None

    def counters(self) -> dict[int, dict[str, Any]]:
        """Registers and bytes each machine shipped to others, and its acts."""
        out: dict[int, dict[str, Any]] = {0: {"messages": self.link.messages, "bytes": self.link.bytes,
                                              "acts": self._seq, "wait_s": self.wait_s, "waits": self.waits}}
        machines = list(self.hosts)
        answers = self._get([self.hosts[m].counters.remote() for m in machines], machines, "report its counters")
        for m, c in zip(machines, answers, strict=True):
            out[m] = c
        return out


class StoppedRuntime(Runtime):
    """What a multi-machine session runs after a cancelled call: the other machines' registers and variables
    cannot be put back, so every call says to clear the session."""

    def run_call(self, instances: list[JobInstance], key: tuple[str, ...] | None = None, guard: Any = None) -> None:
        raise MachineError("the machines of this session were stopped after a failed call; call "
                           "flow.clear_default_session() and run the job functions again")

    def close(self) -> None:
        self.closed = True


def _gpu_count(plan: Plan, machine: int) -> int:
    devices = {dev for t in plan.tasks if t.machine_id == machine
               for op in t.exec_sequence if op.parallel_conf.device_tag == "gpu"
               for m, dev in op.parallel_conf.devices if m == machine}
    return len(devices)


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
