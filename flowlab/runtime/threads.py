"""Run mode in parallel: one OS thread per Plan thread id, each running its actors' loop (OneFlow's ThreadMgr).

OneFlow gives every thread id of a Plan (a device's compute thread, CommNet, TickTock, one thread per independent
task) an OS thread with a blocking channel and a local queue; ``ActorMsgBus`` routes a message to the thread its
destination's actor id names. Here each thread id is a ``ThreadLoop``: an OS thread and its queue of ready
actors (each actor's ``ready_queue`` points at its thread's). A delivery to an actor of another thread lands in
that thread's queue, and the sender wakes that thread.

The protocol's bookkeeping (slots, reading counts, ready queues, buffers) is guarded by one lock, held by a
loop while it picks an actor and hands registers on; a compute kernel runs with it released (``_Unlocked``), and
Numba kernels release the GIL, so the kernels of two threads run on two cores at once. The bookkeeping is Python
and runs under the GIL anyway: one lock costs no parallelism, and an act stays the one act of the stepped
path (``Runtime.acts``). Kernels that touch the runtime itself (foreign I/O, watches, section
notifies: system_kernels.py) run under the lock.

Results are the stepped path's bit for bit: an actor acts only when the protocol allows it, a kernel is a pure
function of its registers, and what two acts could race on (a reused memory block, an interface blob shared by
jobs) the Plan orders by registers (control edges along a chain, critical sections). The interleaving of threads
is free, so the act *count* of the ReentrantLock (which takes every request present at once) may differ.

Loops start on a runtime's first parallel call and park between calls; ``stop()`` (from ``Runtime.close``, a
failed or interrupted call, or ``Runtime.stop_threads``) ends and joins them. ``step()`` is one act at a time on
the caller's thread. Observing a call does not change its path: with a sink attached (``Runtime.sink``, ``hooks``
subscribed), each loop reports its acts to it from its own thread, under the lock (one report at a time, in the
order the acts happened); a subscriber that raises fails the call as a kernel would.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from ..flags import get
from .hang import hang_error

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..ir import Plan
    from .actor import Actor
    from .job_instance import JobInstance
    from .runtime import Runtime

# Kernels that read or write the runtime's own state (its buffers, its job instances): run under the lock.
RUNTIME_KERNELS = frozenset({"foreign_input", "foreign_output", "foreign_watch", "callback_notify"})


def threads_setting() -> bool | None:
    """``FLOWLAB_THREADS``: 1 forces parallel run mode, 0 forces stepped, unset chooses by Plan."""
    return get("threads")


def compute_threads(plan: Plan) -> set[tuple[int, int]]:
    """The (machine_id, thrd_id) of threads with a compute kernel: a NormalForward task of a non-system op."""
    return {(t.machine_id, t.thrd_id) for t in plan.tasks if t.task_type == "NormalForward" and not t.system_op}


def wants_parallel(plan: Plan) -> bool:
    """Whether run mode uses one OS thread per Plan thread. By default only when two or more threads compute:
    with one busy compute thread (every one-device Plan) threads add hand-offs and take nothing off it."""
    if any(t.gpu_device is not None for t in plan.tasks):
        # GPU plans act on one host thread: their kernels and copies already run asynchronously on the GPU's
        # streams, a Numba CUDA context belongs to the thread that made it, and the simulator swaps the `cuda`
        # module of a kernel's globals while it runs, which a second thread would see (CI caught it)
        return False
    setting = threads_setting()
    return setting if setting is not None else len(compute_threads(plan)) >= 2


class _Unlocked:
    """A compute kernel, called from a loop holding the lock: it runs with the lock released."""

    __slots__ = ("kernel", "lock")

    def __init__(self, kernel: Any, lock: threading.Lock) -> None:
        self.kernel, self.lock = kernel, lock

    def __call__(self, ins: list[Any], outs: list[Any]) -> None:
        self.lock.release()
        try:
            self.kernel(ins, outs)
        finally:
            self.lock.acquire()

    def __repr__(self) -> str:
        return f"_Unlocked({self.kernel!r})"


class Bell:
    """Sleep until rung, with the runtime's lock released meanwhile: a threading.Condition for one sleeper, without
    the lock a Condition allocates per wait (a hand-off between threads is the parallel mode's per-act cost)."""

    __slots__ = ("bell", "sleeping")

    def __init__(self) -> None:
        self.bell = threading.Lock()
        self.bell.acquire()  # held while nobody rang
        self.sleeping = False

    def sleep(self, lock: threading.Lock) -> None:
        """Called with ``lock`` held; returns with it held, after a ``ring()`` (or at once if one came first)."""
        self.sleeping = True
        lock.release()
        try:
            self.bell.acquire()
        finally:  # an interrupt in the caller's sleep: the lock is held again before it propagates
            lock.acquire()
            self.sleeping = False

    def ring(self) -> None:
        """Called with the lock held: wake the sleeper, if it sleeps."""
        if self.sleeping:
            self.sleeping = False
            self.bell.release()


class ThreadLoop(Bell):
    """One Plan thread: its OS thread, its ready actors (oldest first); it sleeps when it has none."""

    __slots__ = ("key", "ready", "thread")

    def __init__(self, key: tuple[int, int]) -> None:
        super().__init__()
        self.key = key
        self.ready: deque[Actor] = deque()
        self.thread: threading.Thread | None = None

    def __repr__(self) -> str:
        state = "sleeping" if self.sleeping else "running" if self.thread else "not started"
        return f"<ThreadLoop machine {self.key[0]} thread {self.key[1]}: {len(self.ready)} ready, {state}>"


class LaneWorker:
    """An OS thread that runs one lane per replay: ``start`` hands it the lane, ``wait`` waits until it ran it."""

    def __init__(self, name: str) -> None:
        self.go, self.done = threading.Lock(), threading.Lock()
        self.go.acquire()
        self.done.acquire()
        self.job: tuple[Callable[[Any], None], Any] | None = None
        self.stopping = False
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    def start(self, fn: Callable[[Any], None], arg: Any) -> None:
        self.job = (fn, arg)
        self.go.release()

    def wait(self) -> None:
        self.done.acquire()

    def stop(self) -> None:
        self.stopping = True
        self.job = None
        self.go.release()
        self.thread.join()

    def _loop(self) -> None:
        while True:
            self.go.acquire()
            if self.stopping:
                return
            job, self.job = self.job, None
            if job is not None:
                job[0](job[1])  # run_lane keeps its own failures
            self.done.release()

    def __repr__(self) -> str:
        return f"<LaneWorker {self.thread.name}: {'stopping' if self.stopping else 'parked'}>"


class ActorThreads:
    """The loops of one runtime, and the caller's side of a parallel call (``run``)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.lock = threading.Lock()
        self.done = Bell()  # the caller sleeps here until the runtime is quiet
        self.loops: dict[tuple[int, int], ThreadLoop] = {}
        self.loop_of: dict[int, ThreadLoop] = {}
        for actor in rt.actors.values():
            key = (actor.task.machine_id, actor.task.thrd_id)
            loop = self.loops.get(key)
            if loop is None:
                loop = self.loops[key] = ThreadLoop(key)
            self.loop_of[actor.actor_id] = loop
        self.loop_list = list(self.loops.values())
        # The other threads an act can make an actor ready on (its consumers' and producers'): woken after it.
        self.peers: dict[int, tuple[ThreadLoop, ...]] = {}
        for actor in rt.actors.values():
            own = self.loop_of[actor.actor_id]
            peers = [c for cs in actor.consumers.values() for c in cs] + list(actor.producer_of.values())
            self.peers[actor.actor_id] = tuple({id(lp): lp for lp in (self.loop_of[p.actor_id] for p in peers)
                                                if lp is not own}.values())
        self.busy = 0  # loops inside an act (a kernel runs unlocked: the runtime is not quiet meanwhile)
        self.error: tuple[Actor | None, BaseException] | None = None  # the first failure, and whose act it was
        self.stopping = False
        self.active = False  # the actors' ready queues are the loops' and compute kernels are unlocked
        self.kernels: dict[int, Any] = {}  # actor id -> its own kernel, while ``active``
        self.workers: list[LaneWorker] = []  # the OS threads of per-thread replay (replay/lanes.py)

    def lane_workers(self, n: int) -> list[LaneWorker]:
        """``n`` parked OS threads for a replay's lanes other than the caller's (started once, kept until
        ``stop``)."""
        while len(self.workers) < n:
            self.workers.append(LaneWorker(f"flowlab-lane-{len(self.workers) + 1}"))
        return self.workers[:n]

    @property
    def running(self) -> bool:
        return any(loop.thread is not None for loop in self.loop_list)

    # -- entering and leaving parallel mode ---------------------------------------------------------
    def enter(self) -> None:
        """Point every actor's ready queue at its thread's, move what is queued there, unlock compute kernels,
        and start the loops (once). Called with the lock held, while the runtime is idle."""
        rt = self.rt
        for actor in rt.actors.values():
            actor.ready_queue = self.loop_of[actor.actor_id].ready
            kernel = actor.kernel
            if kernel is not None and actor.task.exec_sequence[0].op_type not in RUNTIME_KERNELS:
                self.kernels[actor.actor_id] = kernel
                actor.kernel = kernel.wrap(_Unlocked(kernel.fn, self.lock))
        while rt.ready:
            actor = rt.ready.popleft()
            actor.ready_queue.append(actor)
        self.active = True
        for loop in self.loop_list:
            if loop.thread is None:
                m, t = loop.key
                loop.thread = threading.Thread(target=self._loop, args=(loop,), name=f"flowlab-thrd-{m}:{t}",
                                               daemon=True)
                loop.thread.start()

    def leave(self) -> None:
        """Back to one scheduler (``step``): the actors' ready queue is the runtime's, kernels are their own."""
        if not self.active:
            return
        rt = self.rt
        for actor in rt.actors.values():
            actor.ready_queue = rt.ready
            kernel = self.kernels.get(actor.actor_id)
            if kernel is not None:
                actor.kernel = kernel
        self.kernels.clear()
        for loop in self.loop_list:  # empty after a call; after a failure the state is given up anyway
            rt.ready.extend(loop.ready)
            loop.ready.clear()
        self.active = False

    def stop(self) -> None:
        """End and join every loop (each finishes the act it is in), then leave parallel mode."""
        with self.lock:
            self.stopping = True
            for loop in self.loop_list:
                loop.ring()
        for loop in self.loop_list:
            if loop.thread is not None:
                loop.thread.join()
                loop.thread = None
        for worker in self.workers:  # parked between replays: none is inside a lane now
            worker.stop()
        self.workers.clear()
        with self.lock:
            self.stopping = False
            self.error = None
            self.leave()

    # -- a call ------------------------------------------------------------------------------------
    def run(self, instances: list[JobInstance]) -> None:
        """Launch a call's instances and wait until the runtime is quiet: every loop idle, no act in flight.
        Raises what a kernel raised (a KernelError naming its op), or HangError (a RuntimeIdle) when the runtime
        went quiet before the last instance finished; either way, and on an interrupt, the loops are stopped first."""
        rt = self.rt
        last = instances[-1]
        try:
            with self.lock:
                if not self.active:
                    self.enter()
                for instance in instances:
                    rt.launch(instance)
                for loop in self.loop_list:
                    if loop.ready:
                        loop.ring()
                while self.error is None and not self._quiet():
                    self.done.sleep(self.lock)
                error = self.error
        except BaseException:  # an interrupt while waiting: the acts in flight end, then the loops
            self.stop()
            raise
        if error is not None:
            self.stop()
            raise error[1]  # a kernel's failure is a KernelError naming its op already (Runtime.acts)
        if not last.finished:
            self.stop()
            raise hang_error(rt)

    def _quiet(self) -> bool:
        return self.busy == 0 and not any(loop.ready for loop in self.loop_list)

    def _loop(self, loop: ThreadLoop) -> None:
        with self.lock:
            try:
                self._serve(loop)
            except BaseException as err:  # not an act's: the runtime's own bug; the caller must not wait forever
                if self.error is None:
                    self.error = (None, RuntimeError(f"{loop} stopped: {type(err).__name__}: {err}"))
                    self.error[1].__cause__ = err
                self.done.ring()

    def _serve(self, loop: ThreadLoop) -> None:
        """One thread's actor loop (the lock held): act the oldest ready actor, wake the threads it made an actor
        ready on, and the caller once the runtime is quiet."""
        ready, lock, rt, peers = loop.ready, self.lock, self.rt, self.peers
        act = rt.acts
        while True:
            while (not ready or self.error is not None) and not self.stopping:
                loop.sleep(lock)
            if self.stopping:
                return
            actor = ready.popleft()
            actor.queued = False
            if actor.is_ready():
                self.busy += 1
                try:
                    act(actor, None, True)  # once: the stepped path's act; a kernel releases the lock meanwhile
                except BaseException as err:  # handed to the caller, who stops the loops
                    if self.error is None:
                        self.error = (actor, err)
                    self.busy -= 1
                    self.done.ring()
                    continue
                self.busy -= 1
                for other in peers[actor.actor_id]:
                    if other.sleeping and other.ready:
                        other.ring()
            if not ready and self.done.sleeping and self._quiet():
                self.done.ring()

    def __repr__(self) -> str:
        state = "parallel" if self.active else "stepped"
        return f"<ActorThreads: {len(self.loops)} threads, {state}, {'running' if self.running else 'stopped'}>"
