"""The processes of a Ray run: one ``MachineHost`` per Plan machine other than 0.

A host runs flowlab's own Runtime for its machine's actors (``wiring.localize``): on a thread of its own once
``start()``ed (the RayExecutor's calls), or act by act as the driver says (``apply``/``step``: flow.debug's
RayStepper). On its thread, registers from other machines arrive by fire-and-forget ``deliver`` calls and are
applied between acts. The
driver (the user's process) runs machine 0 itself, as OneFlow's master does; since a Ray driver cannot be called,
what a host sends to machine 0 waits in that host's outbox until the driver takes it (a long-poll ``take`` call
that returns as soon as something is there). No separate mailbox actor: each Ray actor is a new Python process
(about 3 s to start on a small loaded box), and a session starts one per machine other than 0, nothing more.

A host that fails (a kernel raising, anything else) stops and answers its ``watch()`` call with what failed; a
host that dies makes that call raise. The driver waits on both, so a fault reaches the caller within the poll.
These classes are plain; ``cluster.remote_classes()`` wraps them with ``ray.remote`` (this module imports no Ray).
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from typing import Any

from ..errors import KernelError
from ..ir import Plan
from ..runtime.hang import as_rows, wait_graph
from ..runtime.runtime import Runtime
from .wiring import Batch, Inbox, Link, localize


class MachineHost:
    """One Plan machine's actors, run by flowlab's Runtime in this (Ray actor) process."""

    def __init__(self, plan: Plan, machine: int, kernel_impl: str | None = None) -> None:
        self.machine = machine
        self.link = Link(machine)
        self.rt = Runtime(plan, kernel_impl)
        # A host sees acts, not calls: in the tiered mode its kernels run Numba's from their first act (the driver's
        # machine 0 runs its first call on the reference tier), so its tier never depends on timing either.
        self.rt.tier_phase.numba = True
        localize(self.rt, machine, self.link)
        self.inbox = Inbox(self.rt, on_close=self._close)
        self.queue: queue.SimpleQueue[Batch | None] = queue.SimpleQueue()
        self.stopped = threading.Event()
        self.fault: dict[str, Any] | None = None
        self.peers: dict[int, Any] = {}
        self.outbox: list[Batch] = []  # batches for machine 0, until the driver takes them
        self.out_cond = threading.Condition()
        self.thread: threading.Thread | None = None  # the run-mode loop, once started
        self.busy_s = 0.0

    # -- set-up and the run-mode loop ----------------------------------------------------------------
    def connect(self, peers: dict[int, Any]) -> int:
        self.peers = peers
        return self.machine

    def start(self) -> None:
        """Run this machine's acts on a thread of its own (the RayExecutor's calls). A host never started is
        driven act by act instead (the RayStepper's ``apply``/``step``)."""
        if self.thread is None:
            self.thread = threading.Thread(target=self._loop, name=f"flowlab-machine-{self.machine}", daemon=True)
            self.thread.start()

    def deliver(self, batch: Batch) -> None:
        """Fire-and-forget from another machine: applied by the loop thread between acts."""
        self.queue.put(batch)

    def take(self, timeout: float) -> list[Batch]:
        """The driver's long poll: every batch for machine 0, after waiting up to ``timeout`` s for the first."""
        with self.out_cond:
            if not self.outbox and not self.stopped.is_set():
                self.out_cond.wait(timeout)
            out, self.outbox = self.outbox, []
            return out

    def watch(self) -> dict[str, Any] | None:
        """Returns when the host stops: what failed, or None after a clean stop."""
        self.stopped.wait()
        return self.fault

    def stop(self) -> None:
        self.queue.put(None)
        self.stopped.set()

    def counters(self) -> dict[str, Any]:
        """Registers and bytes shipped, acts, and seconds spent acting and applying what arrived."""
        return {"messages": self.link.messages, "bytes": self.link.bytes, "acts": self.rt._seq, "busy_s": self.busy_s}

    def _loop(self) -> None:
        rt, q = self.rt, self.queue
        try:
            while not self.stopped.is_set():
                batch = q.get()
                t0 = time.perf_counter()
                while batch is not None:
                    self.inbox.apply(batch)
                    try:
                        batch = q.get_nowait()
                    except queue.Empty:
                        break
                if batch is None:
                    return
                while rt.step(False) is not None:
                    pass
                self._flush()  # once idle: fewer, larger messages (each is a Ray call, ~1 ms on a loaded box)
                self.busy_s += time.perf_counter() - t0
        except BaseException as err:  # every failure goes to the driver, with the op it names
            self.fault = fault_report(self.machine, err)
        finally:
            self.stopped.set()
            with self.out_cond:  # a waiting take returns now; the driver then sees the watch answer
                self.out_cond.notify_all()

    def _flush(self) -> None:
        for to_machine, batch in self.link.take():
            if to_machine == 0:
                with self.out_cond:
                    self.outbox.append(batch)
                    self.out_cond.notify_all()
            else:
                self.peers[to_machine].deliver.remote(batch)

    def _close(self) -> None:
        self.rt.closed = True
        for actor in self.rt.actors.values():
            actor.update_state()

    # -- stepping (never started): the driver orders every act and every delivery ----------------------
    def apply(self, batches: list[Batch]) -> tuple[int, str] | None:
        """Apply batches now; -> the actor that acts next here (task id, name), if any."""
        for batch in batches:
            self.inbox.apply(batch)
        return self._next()

    def step(self) -> tuple[Any, list[tuple[int, Batch]], tuple[int, str] | None]:
        """One act here -> (its event, the batches it sent, the actor that acts next here)."""
        if self.thread is not None:  # two schedulers over one runtime would interleave its acts at random
            raise RuntimeError(f"machine {self.machine} runs its own loop (start()); it cannot also be stepped")
        try:
            event = self.rt.step()
        except BaseException as err:  # every failure goes to the driver, with the op it names
            self.fault = fault_report(self.machine, err)
            self.stopped.set()
            return self.fault, [], None
        return event, self.link.take(), self._next()

    def _next(self) -> tuple[int, str] | None:
        actor = self.rt.peek()
        return None if actor is None else (actor.actor_id, actor.name)

    def variable_registers(self) -> dict[int, dict[str, Any]]:
        """The registers of this machine's variables (regst id -> lbn -> array), for the driver to read."""
        return {rid: dict(self.rt.regsts[rid][0].blobs) for rid in _variable_regsts(self.rt)}

    def set_registers(self, values: dict[int, dict[str, Any]]) -> None:
        for rid, blobs in values.items():
            for lbn, value in blobs.items():
                self.rt.regsts[rid][0].blobs[lbn][...] = value

    def wait_rows(self) -> tuple[list[tuple[Any, ...]], list[str]]:
        """This machine's part of the wait-for graph (runtime/hang.py's Blocked records as tuples) and its last
        acts, oldest first: what the driver's HangError shows for it."""
        graph = wait_graph(self.rt)
        return as_rows(graph), graph.recent.get(self.machine, [])

    def actor_rows(self) -> list[tuple[int, str, str, str | None]]:
        """(task id, name, state, why blocked) of every actor here."""
        return [(a.actor_id, a.name, a.state, a.blocked_reason()) for a in self.rt.actors.values()]



def _variable_regsts(rt: Runtime) -> list[int]:
    return [next(iter(a.writable)) for a in rt.actors.values()
            if a.task.exec_sequence and a.task.exec_sequence[0].op_type == "variable" and not a.task.is_boxing]


def fault_report(machine: int, err: BaseException) -> dict[str, Any]:
    """What the driver needs to name the failure: the machine, and for a kernel error its task, op and job."""
    report: dict[str, Any] = {"machine": machine, "type": type(err).__name__, "message": str(err),
                              "traceback": "".join(traceback.format_exception(err))}
    if isinstance(err, KernelError):
        report.update(task=getattr(err, "task_name", None), op=getattr(err, "op_name", None),
                      job=getattr(err, "job_name", None))
    return report
