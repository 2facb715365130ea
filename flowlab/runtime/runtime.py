"""The runtime: one actor per task, a message bus, and a deterministic scheduler whose unit is one act.

``step()`` delivers pending messages and performs exactly one act, returning an ActEvent. Running normally
is the same scheduler looping until the awaited job instances finish and the runtime is idle (``_run_to_idle``);
the step debugger calls ``step()``. Both are the one act loop ``acts`` (once, or until idle), which reports each
act to the event sink (``sink``, events.py) when someone listens: observing a run does not change how it runs.

What runs a call is an executor (executor.py): protocol stepping is ``run_protocol``; a faster executor (the
replay executor, flowlab.replay, proven bit-identical to the protocol by tests/replay/test_replay_proof.py)
performs steady-state calls the protocol already ran and may defer the protocol's bookkeeping: it sets
``runtime.layer`` (a ``CallLayer``) and ``deferred``, and ``observe()`` has the layer bring the state up to date
before anything reads it (``step``, ``peek``, ``seq``). This module knows nothing else of it.

In run mode a Plan with two or more compute threads (or any Plan, with ``FLOWLAB_THREADS=1``) runs each of its
thread ids on its own OS thread (``threads.ActorThreads``, OneFlow's ThreadMgr); ``step()`` is always one act at a
time, across all threads or on one chosen thread (``step(thread=...)``), and both give the same results.

The actors' wiring and kernel binding, done once when a Runtime is made, are binding.py.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ..errors import kernel_error
from ..ir import Plan
from ..kernels.tiered import TierPhase
from .actor import MSG_REGST, MSG_RETURN, Actor
from .binding import ACTOR_CLASSES, WAIT_BUFFER, setup_boxing, wire
from .events import EVENT_ONLY, ActEvent, EventSink, HookList, RuntimeIdle
from .executor import ProtocolStepper, Stepper
from .gpu import GpuStreams
from .hang import WaitGraph, hang_error, new_ring, wait_graph
from .job_instance import JobInstance
from .main_actors import WaitAndSendIdsActor
from .regst import Regst, allocate_arenas, make_regsts
from .system_kernels import WATCH_BUFFER
from .threads import ActorThreads, wants_parallel
from .transport import InProcessTransport, Transport

__all__ = ["ACTOR_CLASSES", "WAIT_BUFFER", "CallLayer", "Runtime", "RuntimeIdle"]


class CallLayer(Protocol):
    """What an executor that defers the protocol's bookkeeping leaves on the runtime (``runtime.layer``): while
    ``runtime.deferred`` is set it owes the protocol that bookkeeping, which ``observe()`` writes (and clears the
    flag) before the protocol's state is read."""

    def observe(self) -> None: ...


class Runtime:
    executor = "protocol"  # what its act events name as their executor ("threads" when its executor is; Ray's: "ray")
    # What a backend can do, declared rather than probed. ``remote``: its actors, registers and variables live in
    # other processes (flowlab.distributed's RayRuntime), which override the five methods below (``stepper`` and
    # four no-ops here, as everything is in this process). None of them is the act loop.
    remote = False

    def __init__(self, plan: Plan, kernel_impl: str | None = None,
                 arenas: dict[int, np.ndarray] | None = None, transport: Transport | None = None,
                 parallel: bool | None = None) -> None:
        """``arenas``: the memory blocks to run over, e.g. those of a runtime being replaced after a cancelled call
        (the variables live in them); fresh zeroed ones by default. ``transport`` carries registers between the
        Plan's machines (CopyCommNet tasks); in-process by default. ``parallel``: one OS thread per Plan thread in
        run mode, as the session's ExecutionPolicy decided (None: threads.wants_parallel decides)."""
        self.plan = plan
        self.transport = transport if transport is not None else InProcessTransport()
        self.kernel_impl = kernel_impl
        self.kernel_tiers: dict[int, str] = {}  # task id -> its kernel's tier, for kernels that never switch
        # Which tier the tiered kernels run (kernels/tiered.py): the reference until the Session says a later call
        # began (it hands the value on to a runtime it rebuilds, and to flow.debug's)
        self.tier_phase = TierPhase()
        self.arenas = arenas if arenas is not None else allocate_arenas(plan.mem_blocks, plan)
        self.regsts: dict[int, list[Regst]] = make_regsts(plan, self.arenas)
        self.gpu_streams = GpuStreams()  # one CUDA stream per GPU thread, made when a GPU task is set up
        self.buffers: dict[str, deque[Any]] = {WAIT_BUFFER: deque(), WATCH_BUFFER: deque()}
        self.closed = False
        self.msgs: deque[tuple[Actor, int, Any]] = deque()
        self.ready: deque[Actor] = deque()
        # Who listens to the acts: ``sink`` (None: nobody), kept in step with ``hooks``, the subscribers' list
        self.sink: EventSink | None = None
        self.hooks: list[Callable[[ActEvent], None]] = HookList(self)
        self._seq = 0  # acts so far, less those a layer has not accounted yet (``seq`` observes them)
        self.launched = 0
        self.recent = new_ring()  # the last acts, (actor id, act id): what a hang's diagnosis shows (hang.py)
        self.layer: CallLayer | None = None  # the replay executor's layer, which may owe bookkeeping (flowlab.replay)
        self.deferred = False  # the layer owes the protocol bookkeeping: ``observe()`` before reading state
        self._routes: dict[str, tuple[int, tuple[deque[Any], ...]]] = {}
        self._notifiers: dict[int, deque[Any]] = {}  # section id -> its job's CallbackNotifier buffer
        self.actors: dict[int, Actor] = {}
        # The Plan's actors on other machines, by task id: none in one process; flowlab.distributed's wiring moves
        # them here (and puts stand-ins on the edges) when this runtime is one machine of several
        self.remote_actors: dict[int, Actor] = {}
        for task in plan.tasks:
            cls = ACTOR_CLASSES.get(task.task_type, Actor)
            self.actors[task.task_id] = cls(self, task, self.regsts)
        wire(self)
        self.wait_actor = next(a for a in self.actors.values() if isinstance(a, WaitAndSendIdsActor))
        self.thread_keys = frozenset((t.machine_id, t.thrd_id) for t in plan.tasks)
        # One OS thread per Plan thread in run mode, when the Plan gains from it (threads.wants_parallel).
        parallel = wants_parallel(plan) if parallel is None else parallel
        self.threads: ActorThreads | None = ActorThreads(self) if parallel else None

    def _setup_boxing(self, actor: Actor) -> None:
        """Bind a boxing or CopyCommNet task's kernel and arrays again (distributed/wiring.py, after it swaps the
        transport): binding.setup_boxing."""
        setup_boxing(self, actor)

    def buffer(self, name: str) -> deque[Any]:
        return self.buffers.setdefault(name, deque())

    # -- launching ---------------------------------------------------------------------------------
    @property
    def seq(self) -> int:
        """The number of acts performed so far (by a layer included)."""
        self.observe()
        return self._seq

    def observe(self) -> None:
        """Before the protocol's state is read: a layer writes the bookkeeping it deferred."""
        if self.deferred:
            self.layer.observe()  # type: ignore[union-attr]  # only a layer sets ``deferred``

    def launch(self, instance: JobInstance, job_id: bool = True) -> None:
        """Queue one run of a job (OneFlow's LaunchJob): its buffers first, then its job id for the main job.
        ``job_id=False``: only the buffers, for a layer that performs the call's acts itself."""
        wait_id, queues = self._routes.get(instance.job_name) or self._route(instance.job_name)
        instance.seq = self.launched
        self.launched += 1
        for queue in queues:
            queue.append(instance)
        if job_id:
            self.buffers[WAIT_BUFFER].append(wait_id)
            wait = self.wait_actor
            if not wait.queued and wait.is_ready():  # self.wake(wait), inlined: three launches a call
                wait.queued = True
                wait.ready_queue.append(wait)

    def run_call(self, instances: list[JobInstance], key: tuple[str, ...] | None = None,
                 guard: Callable[[tuple[str, ...] | None], None] | None = None) -> None:
        """Launch one call's instances and run them by the protocol until the runtime is idle again (the last one
        finished first): executor.ProtocolExecutor's call, for a runtime used without a session. ``guard(names)``
        is called before the call's first act (None: every variable the call writes may be left half-written)."""
        if guard is not None:
            guard(None)
        self.run_protocol(instances)

    def run_protocol(self, instances: list[JobInstance]) -> None:
        """``run_call`` by the protocol: launch, act until the last instance finished, then until idle (on the
        Plan's threads in parallel when the runtime has them and no layer wants one order). A sink attached does
        not change the path: the threads report their acts to it as the caller's loop would."""
        self.observe()
        if self.threads is not None and self.layer is None and not self.closed:
            self.threads.run(instances)
            return
        self._stepped()
        for instance in instances:
            self.launch(instance)
        self._run_to_idle(instances[-1])

    def _run_to_idle(self, last: JobInstance | None) -> None:
        """Act until ``last`` finished and then until idle (``last`` None: until idle): a protocol call's loop,
        and closing's. Raises HangError (a RuntimeIdle) when it stops before ``last`` finished."""
        self.acts(None, last)

    def _route(self, job_name: str) -> tuple[int, tuple[deque[Any], ...]]:
        """A job's id and the buffers a launch of it enters (its ForeignInput/Output, then its notifier)."""
        route = self._routes.get(job_name)
        if route is not None:
            return route
        job_id = self.plan.job_names.index(job_name)
        kind = self.plan.job_kinds[job_id]
        queues = []
        if kind == "push" or job_name in ("System-ModelLoad", "System-ModelSave"):
            queues.append(self.buffer(f"ForeignInput-{job_name}"))
        if kind == "pull":
            queues.append(self.buffer(f"ForeignOutput-{job_name}"))
        queues.append(self.buffer(f"CallbackNotifier-{job_name}"))
        self._routes[job_name] = job_id, tuple(queues)
        return self._routes[job_name]

    def notify_section_done(self, section_id: int) -> None:
        queue = self._notifiers.get(section_id)
        if queue is None:
            queue = self.notifier(section_id)
        queue.popleft().finished = True  # JobInstance.finish(), inlined

    def notifier(self, section_id: int) -> deque[Any]:
        """The CallbackNotifier buffer of a critical section's job: its launched instances, oldest first."""
        queue = self._notifiers.get(section_id)
        if queue is None:
            job_name = self.plan.job_names[self.plan.critical_sections[section_id].job_id]
            queue = self._notifiers[section_id] = self._route(job_name)[1][-1]
        return queue

    def stepper(self) -> Stepper:
        """What flow.debug steps this runtime with, act by act: protocol stepping here (``ProtocolStepper``); a
        backend whose actors live in other processes gives its own (flowlab.distributed's ``RayStepper``)."""
        return ProtocolStepper(self)

    def shutdown(self, why: str = "stopped") -> None:
        """Stop the machines in other processes this runtime drives (none here)."""

    def fetch_variables(self) -> None:
        """Bring the variables' pieces held in other processes into this runtime's arrays (none here)."""

    def push_variables(self) -> None:
        """Send this runtime's variable values to their pieces in other processes (none here)."""

    def load_variables(self, pieces: dict[str, Any]) -> None:
        """Write a session's ``pieces`` into the pieces held in other processes (none here)."""

    def close(self) -> None:
        """Close the wait buffer: WaitAndSendIds ends and EORD cascades until every actor is done."""
        self.observe()
        self.stop_threads()
        self.closed = True
        self.tier_phase.retired = True  # Numba kernels not yet made for it never will be (kernels/tiered.py)
        self.wait_actor.update_state()
        self._run_to_idle(None)

    def stop_threads(self) -> None:
        """End and join the OS threads of parallel run mode, if any run (the next parallel call starts them)."""
        if self.threads is not None:
            self.threads.stop()

    def _stepped(self) -> None:
        """Leave parallel mode (idle between calls): one scheduler, the runtime's ready queue."""
        if self.threads is not None and self.threads.active:
            with self.threads.lock:
                self.threads.leave()

    # -- scheduling --------------------------------------------------------------------------------
    def send(self, dst: Actor, kind: int, payload: Any) -> None:
        """Queue a message; only EORD travels this way (register hand-offs are delivered at once)."""
        self.msgs.append((dst, kind, payload))

    def wake(self, actor: Actor) -> None:
        if not actor.queued and actor.is_ready():
            actor.queued = True
            actor.ready_queue.append(actor)  # its thread's queue in parallel mode, else the runtime's

    def _drain(self) -> None:
        msgs = self.msgs
        while msgs:
            actor, kind, payload = msgs.popleft()
            if kind == MSG_REGST:
                actor.on_regst(payload)
            elif kind == MSG_RETURN:
                actor.on_return(payload)
            else:
                actor.on_eord(payload)
            if self.closed:  # EORD exists only while shutting down
                actor.update_state()
            if not actor.queued and actor.is_ready():
                actor.queued = True
                actor.ready_queue.append(actor)

    def step(self, record: bool = True, thread: int | tuple[int, int] | None = None) -> ActEvent | bool | None:
        """Perform exactly one act and return what it did (an ActEvent); None when no actor can act.

        ``record=False`` returns True instead, and builds the event only for a sink attached (``acts``): the act
        itself is the same code either way. ``thread`` (a ``thrd_id``, or ``(machine_id, thrd_id)``): the act is
        the oldest ready actor's of that Plan thread (None when that thread has none), the others wait.
        """
        if self.deferred:
            self.layer.observe()  # type: ignore[union-attr]
        if self.threads is not None and self.threads.active:
            self._stepped()
        if self.msgs:
            self._drain()
        if thread is not None:
            actor = self._ready_on(thread, take=True)
        else:
            ready = self.ready
            actor = None
            while ready:
                actor = ready.popleft()
                actor.queued = False
                if actor.is_ready():
                    break
                actor = None
        if actor is None:
            return None
        event = self.acts(actor, once=True, record=record)
        return event if record else True

    def acts(self, actor: Actor | None, last: JobInstance | None = None, once: bool = False, record: bool = False
             ) -> ActEvent | None:
        """The act loop of every protocol run, and the one place an act happens: ``step()`` (``once``),
        ``_run_to_idle`` (a protocol call, closing) and parallel mode's OS threads (threads.ActorThreads._serve,
        ``once``) all come here. ``actor``, when given, is ready and already taken off its ready queue: it acts
        first. Then, unless ``once``, the oldest ready actor acts, until ``last`` finished (None: any time) and
        the runtime is idle; HangError (a RuntimeIdle) when it goes idle before.

        Each act is counted and remembered (a hang's last acts), its actor queued again if still ready, and the
        act reported to the sink (``sink``, read per act: a subscriber may come or go within a call) after that
        bookkeeping, so a subscriber that raises leaves the protocol consistent. With no sink the act builds
        nothing for observation. ``record``: the first act's event is wanted even with no sink (``step()``'s).
        Returns the last act's event when ``once`` (None without one)."""
        if not once:  # (one act of an OS thread's loop, the most frequent ``once``, binds only what it uses)
            ready, msgs, popleft = self.ready, self.msgs, self.ready.popleft
        note = self.recent.append
        closing = self.closed  # closing's update_state below can make a queued actor unready: re-checked then
        while True:
            sink = self.sink
            if actor is None:
                if msgs:
                    self._drain()
                if not ready:
                    if last is None or last.finished:
                        return None
                    raise hang_error(self)
                actor = popleft()
                actor.queued = False
                # No readiness check but while closing (step() has one): an actor is queued only when ready, and
                # only its own act can take its readiness away; tests/runtime/test_runtime.py checks it after every act.
                if closing and not actor.is_ready():
                    actor = None
                    continue
            elif record and sink is None:
                sink = EVENT_ONLY  # step()'s caller wants the event: built, handed to no one
            try:
                moved = actor.act(sink)
            except Exception as err:
                raise kernel_error(self.plan, actor, err) from err
            seq = self._seq
            self._seq = seq + 1
            note((actor.actor_id, actor.act_id))
            if closing:
                actor.update_state()
            slots = actor.ready_slots  # is_ready() without a call, for every actor but the main job's
            if all(slots) if slots is not None else actor.is_ready():
                actor.queued = True
                actor.ready_queue.append(actor)  # the runtime's, or in parallel mode its thread's
            if sink is not None:
                event = sink.acted(self, actor, seq, moved)  # type: ignore[arg-type]  # moved: given a sink
                if once:
                    return event
            elif once:
                return None
            actor = None

    def tier_of(self, actor: Actor) -> str | None:
        """Which kernel tier ran the actor's last act (kernels/tiered.py), None for an act with no op kernel."""
        kernel = actor.kernel
        tiered = kernel.tiered if kernel is not None else None
        return tiered.ran if tiered is not None else self.kernel_tiers.get(actor.actor_id)

    def _ready_on(self, thread: int | tuple[int, int], take: bool) -> Actor | None:
        """The oldest ready actor of one Plan thread (taken off the ready queue when ``take``)."""
        key = thread if isinstance(thread, tuple) else (0, thread)
        if key not in self.thread_keys:
            raise ValueError(f"the Plan has no thread {thread!r} (machine_id, thrd_id); its threads are "
                             f"{sorted(self.thread_keys)}")
        for i, actor in enumerate(self.ready):
            task = actor.task
            if (task.machine_id, task.thrd_id) == key and actor.is_ready():
                if take:
                    del self.ready[i]
                    actor.queued = False
                return actor
        return None

    def peek(self, thread: int | tuple[int, int] | None = None) -> Actor | None:
        """The actor that the next ``step()`` (``step(thread=thread)``) will act, without acting (None when idle)."""
        self.observe()
        self._stepped()
        if self.msgs:
            self._drain()
        if thread is not None:
            return self._ready_on(thread, take=False)
        ready = self.ready
        while ready and not ready[0].is_ready():  # drop stale entries, as step() would
            ready.popleft().queued = False
        return ready[0] if ready else None

    def run_until(self, done: Callable[[], bool]) -> int:
        """Step until ``done()``; return the number of acts. Raises HangError (a RuntimeIdle) with the wait-for
        graph if it can never happen."""
        acts = 0
        step = self.step
        while not done():
            if step(False) is None:
                raise hang_error(self)
            acts += 1
        return acts

    # -- inspection --------------------------------------------------------------------------------
    def wait_graph(self) -> WaitGraph:
        """Who waits for whom now, the cycle if any, and the last acts (hang.py; what HangError carries)."""
        return wait_graph(self)

    def describe_blocked(self) -> str:
        lines = ["the runtime is idle but the awaited jobs have not finished; actors waiting:"]
        for actor in self.actors.values():
            reason = actor.blocked_reason()
            if reason and reason != "done" and "waiting for a job" not in reason:
                lines.append(f"  {actor.name}: {reason}")
        return "\n".join(lines)

    def actor(self, key: int | str) -> Actor:
        if isinstance(key, int) and key in self.actors:
            return self.actors[key]
        for actor in self.actors.values():
            if actor.name == key:
                return actor
        raise KeyError(f"no actor {key!r}")
