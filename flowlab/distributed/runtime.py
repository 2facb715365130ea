"""Machine 0 in the user's process, the other machines in Ray actors: ``RayRuntime`` holds them.

The driver runs machine 0's actors (push, pull, main jobs and machine 0's compute, as OneFlow's master does);
``MachineHost`` actors run the others. ``RayRuntime`` is machine 0's runtime wired to the others (its links,
inbox and host actors) and what can be asked of them (their wait graphs, variables, counters): a backend, whose
act loop is Runtime's own. What drives it is composed with it: the RayExecutor (executor.py) runs calls, the hosts
on loops of their own; the RayStepper (stepper.py, ``stepper()``) steps one call for flow.debug, ordering every
act and every delivery from the driver.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..flags import get
from ..ir import Plan
from ..runtime.executor import Stepper
from ..runtime.hang import Blocked, WaitGraph, wait_graph
from ..runtime.runtime import Runtime
from .cluster import import_ray, remote_host_class
from .errors import MachineError
from .stepper import RayStepper
from .wiring import Inbox, Link, localize

START_TIMEOUT_S = 120.0  # host actors start and compile their kernels (Numba's cache makes it seconds)
CLOSE_S = 10.0  # closing waits at most this long for the other machines to wind down, then stops them
KILL_WAIT_S = 5.0  # shutdown waits at most this long for killed hosts to be gone
ASK_S = 5.0  # how long a diagnosis (why_stuck, a HangError) waits for each other machine's answer
POLL_S = 2.0  # a host's take() wait: returns at once when a batch arrives; a fault ends the wait through its watch


class RayRuntime(Runtime):
    executor = "ray"  # its act events (flow.debug steps it, or a subscriber watches a call) name the Ray machines
    remote = True  # the machines' actors and variables are in their processes (Runtime's declared capabilities)

    def __init__(self, plan: Plan, kernel_impl: str | None = None, arenas: dict[int, np.ndarray] | None = None,
                 addresses: tuple[str, ...] = ()) -> None:
        super().__init__(plan, kernel_impl, arenas=arenas)
        self.link = Link(0)
        self.remote_producers = localize(self, 0, self.link)  # their names say what is in flight (stepper.py)
        self.inbox = Inbox(self)
        self.addresses = addresses
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
            ray.get([h.connect.remote(self.hosts) for h in self.hosts.values()],
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

    def stepper(self) -> Stepper:
        """flow.debug's stepper over every machine: the hosts stay unstarted, driven act by act (stepper.py)."""
        return RayStepper(self)

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
        for actor in self.remote_actors.values():
            op = actor.task.exec_sequence[0] if actor.task.exec_sequence else None
            if op is not None and op.op_type == "variable" and not actor.task.is_boxing:
                rid = next(iter(actor.writable))
                per_machine.setdefault(actor.task.machine_id, {})[rid] = dict(self.regsts[rid][0].blobs)
        self._get([self.hosts[m].set_registers.remote(v) for m, v in per_machine.items()], list(per_machine),
                  "take its variables")

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


def _gpu_count(plan: Plan, machine: int) -> int:
    devices = {dev for t in plan.tasks if t.machine_id == machine
               for op in t.exec_sequence if op.parallel_conf.device_tag == "gpu"
               for m, dev in op.parallel_conf.devices if m == machine}
    return len(devices)


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
