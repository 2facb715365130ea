"""The Session: OPEN -> RUNNING -> CLOSED. Ties the front end, the compiler and the runtime together.

All registered job functions are traced and compiled together on the first call of any of them (OneFlow's
TryInit); later calls only run. The default session is made on first use, never at import. A call that fails or
is interrupted is cancelled and leaves the session usable (docs/failure-semantics.md; call_guard.py). A call's
job instances and result are built in job_call.py, checkpoints saved and loaded in model_io.py.
"""

from __future__ import annotations

import enum
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from . import model_io
from .call_guard import INTERRUPTS, MAIN_THREAD, CallGuard, cancel_then_deliver, written_variables
from .call_path import make_executor, schedule_of, schedule_payload
from .compiler import CompileResult, check_plan, compile_jobs
from .errors import SessionStateError
from .flags import get as get_flag
from .frontend import scope
from .frontend.function import FunctionDesc, InterfaceCounter, trace
from .frontend.signature import check_inputs, exact_inputs, numpy_return
from .ir import Job, JobSet, Plan, Schedule
from .job_call import FutureRemoteBlobs, call_instances, call_result, dispatch_watches, paused_gc, start_frozen, thaw
from .kernels.tiered import release as release_tiers
from .local_blob import local_blob
from .model_io import encode_path
from .runtime import JobInstance, Runtime
from .runtime.executor import Call, Executor
from .runtime.policy import ExecutionPolicy, decide
from .runtime.regst import allocate_arenas
from .runtime.system_kernels import WATCH_BUFFER
from .runtime.variables import VariablePieces, variable_pieces

__all__ = ["FutureRemoteBlobs", "Session", "SessionStatus", "call_instances", "clear_default_session",
           "default_session", "encode_path", "get_all_variables", "sync_default_session"]

class SessionStatus(enum.Enum):
    OPEN = "OPEN"
    RUNNING = "RUNNING"
    CLOSED = "CLOSED"


_RUNNING = SessionStatus.RUNNING  # an Enum member's lookup on its class costs ~0.4 us (Python 3.11): once a call


class Session:
    def __init__(self) -> None:
        self.status = SessionStatus.OPEN
        self.function_descs: dict[str, FunctionDesc] = {}
        self.traced_jobs: dict[str, Job] = {}  # user jobs as traced, before any pass
        self.compiled: CompileResult | None = None
        self.runtime: Runtime | None = None
        self.execution: ExecutionPolicy | None = None  # which executors run the calls: decided as the runtime starts
        self.executor: Executor | None = None  # what runs the calls (runtime/executor.py): made with each runtime
        self._stepping_runtimes: weakref.WeakSet[Any] = weakref.WeakSet()  # flow.debug's runtimes on Ray
        self.compile_seconds = 0.0
        self.watch_handlers: dict[str, Any] = {}
        self.partial_jobs: dict[str, Job] = {}
        # One call, trace, compile, checkpoint or variable read at a time, from any number of threads: tracing
        # uses the builder's and the scopes' global state, and a call runs the runtime's one scheduler. Reentrant:
        # a watch handler or a checkpoint helper may call back in.
        self.lock = threading.RLock()
        self._snapshots: dict[tuple[str, ...], CallGuard] = {}  # by launch list
        self._snapshot_copies: dict[str, memoryview] = {}  # by variable, shared by the snapshots
        self.cancelled_calls = 0  # calls that failed or were interrupted mid-run, each undone by a rebuild
        self.called = False  # a job call began: the next runs Numba's kernels in the tiered mode (kernels/tiered.py)

    # -- registration ------------------------------------------------------------------------------
    def add_job(self, desc: FunctionDesc) -> None:
        with self.lock:
            self._add_job(desc)

    def _add_job(self, desc: FunctionDesc) -> None:
        if self.status is not SessionStatus.OPEN:
            raise SessionStateError(
                f"cannot add job function {desc.job_name!r}: the session is {self.status.value} (its jobs were "
                "compiled on the first job call). Call flow.clear_default_session() first, then define the job "
                "functions again."
            )
        self.function_descs[desc.job_name] = desc  # redefining a function while OPEN replaces it

    # -- start -------------------------------------------------------------------------------------
    def try_init(self) -> None:
        with self.lock:
            if self.status is SessionStatus.OPEN:
                if self.function_descs:  # an empty session stays OPEN: jobs may still be defined (issue 9)
                    with paused_gc():
                        self._init()
            elif self.status is SessionStatus.CLOSED:
                raise SessionStateError("the session is closed; flow.clear_default_session() opens a new one")

    def _init(self) -> None:
        start = time.perf_counter()
        counter = InterfaceCounter()
        traced, handlers = {}, {}
        self.partial_jobs = traced  # what was traced before an error, for display; the session stays OPEN
        for name, desc in self.function_descs.items():
            job, builder = trace(desc, counter)  # an error leaves the session OPEN and unchanged
            traced[name] = job
            handlers.update({uuid: handler for _kind, _lbn, handler, uuid in builder.watches})
        compiled = compile_jobs(list(traced.values()), scope.ENV.cpu_device_num,
                                scope.gpu_device_num_in_use(any(
                                    op.device_tag == "gpu" for job in traced.values() for op in job.ops)))
        check_plan(compiled.plan, compiled.job_set)
        self.traced_jobs, self.compiled = traced, compiled
        self._snapshots, self._snapshot_copies = {}, {}  # views into the arenas of a runtime from an earlier try
        self.execution = decide(compiled.plan, ray=scope.ENV.ray)  # once: a rebuilt runtime keeps it
        self.runtime = self._start_runtime()
        self.watch_handlers = handlers
        self.compile_seconds = time.perf_counter() - start
        if scope.ENV.debug_mode or get_flag("debug_mode"):
            from .viz.dump import default_log_dir, dump_debug_files

            dump_debug_files(self, default_log_dir(scope.ENV.log_dir))
        # RUNNING only once the variables hold their initial values: an error or interrupt before this leaves
        # the session OPEN, and the next call starts it again from the traces.
        self.init_variables()
        self.status = SessionStatus.RUNNING

    def _start_runtime(self, arenas: dict[int, np.ndarray] | None = None) -> Runtime:
        """The one place the session makes its Runtime and the executor that runs its calls: when it starts, and
        when a cancelled call is thrown away (then over the same ``arenas``, the memory blocks, where the
        variables live)."""
        plan, execution = self.plan, self.execution
        assert execution is not None
        if execution.ray:
            self.executor = self._start_ray(arenas)
            return self.executor.runtime
        runtime = Runtime(plan, arenas=arenas if arenas is not None else allocate_arenas(plan.mem_blocks, plan),
                          parallel=execution.parallel)
        self.executor = make_executor(self, runtime)  # call_path.py: the policy's executor; flow.debug's steps
        return runtime

    def _start_ray(self, arenas: dict[int, np.ndarray] | None) -> Executor:
        """Machine 0 here, the other machines in Ray actors (flowlab.distributed, imported only here). After a
        cancelled call (``arenas`` given) the other machines' state cannot be put back: the executor refuses calls
        until the session is cleared. No replay: a capture sees the acts of one process."""
        from . import distributed

        if arenas is not None:
            return distributed.StoppedExecutor(Runtime(self.plan, arenas=arenas))
        return distributed.RayExecutor(self._ray_machines())

    def _ray_machines(self) -> Runtime:
        """The Ray backend: machine 0 here, wired to a host actor per other machine (flowlab.distributed)."""
        from . import distributed

        distributed.connect(scope.ENV.ray_address, max(t.machine_id for t in self.plan.tasks) + 1)
        return distributed.RayRuntime(self.plan, addresses=scope.ENV.machines)

    @property
    def generated_calls(self) -> dict[str, Any]:
        """The generated calls (replay/callgen.py) of the job functions, by job name; {} when the executor makes
        none (call_path.CallgenExecutor)."""
        return getattr(self.executor, "generated", {})

    def debug_runtime(self) -> Runtime:
        """A fresh runtime over the Plan for ``flow.debug`` to step (with ``runtime.stepper()``): in-process, or
        machine 0 of the session's Ray machines (flowlab.distributed; its stepper drives every machine)."""
        if self.debug_execution().ray:
            runtime = self._ray_machines()
            self._stepping_runtimes.add(runtime)  # their machine actors stop when the session closes
        else:
            runtime = Runtime(self.plan)
        if self.runtime is not None:  # the tier the session's next call would run (kernels/tiered.py)
            runtime.tier_phase.numba = self.runtime.tier_phase.numba
        return runtime

    def debug_execution(self) -> ExecutionPolicy:
        """flow.debug's policy: protocol stepping, act by act (on the Ray machines for a multi-machine Plan)."""
        return decide(self.plan, ray=scope.ENV.ray, debugger=True)

    def init_variables(self) -> None:
        """Run System-ModelInit: every variable gets its initializer's values (nothing to do in an empty session)."""
        with self.lock:
            if self.compiled is not None and "System-ModelInit" in self.plan.job_names:
                self._run_jobs([JobInstance("System-ModelInit")])

    def save_checkpoint(self, root: Path) -> None:
        """Run System-ModelSave into ``root`` (new or empty, as OneFlow requires), then mark it done. Under the
        session's lock: a save from another thread captures the variables between two calls."""
        with self.lock:
            model_io.save(self, root)

    def load_checkpoint(self, root: Path) -> None:
        """Check every variable's files first, then run System-ModelLoad (nothing is half-loaded: a load that
        fails mid-way is undone like any failed call); a variable the checkpoint lacks is initialized, after a
        warning (OneFlow's fine-tune behaviour)."""
        with self.lock:
            model_io.load(self, root)

    # -- running -----------------------------------------------------------------------------------
    def lazy_run(self, desc: FunctionDesc, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        executor = self.executor
        if executor is not None:
            entry = executor.entries.get(id(desc))
            if entry is not None:  # the executor takes this function's calls whole (callgen): or hands them back
                return entry(args, kwargs)
        return self.run_general(desc, args, kwargs)

    def run_general(self, desc: FunctionDesc, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A job call the general way: check the arguments, start the session, make the call's instances, hand
        them to the executor (``_run_jobs``), put the result together and dispatch the watched values."""
        # bad input fails before anything is launched; the placement's device count (~4 us to work out) only
        # matters to a call that is not exactly the placeholders' arrays
        arrays = exact_inputs(desc.signature, args, kwargs)
        if arrays is None:
            arrays = check_inputs(desc.signature, args, kwargs, desc.device_count)
        with self.lock:
            if self.function_descs.get(desc.job_func.__name__) is not desc:  # desc.job_name, without a property
                replaced = desc.replaced_in(self, self.function_descs.get(desc.job_name))
                if replaced is not None:  # a newer function of the same name, in this very session
                    raise replaced
                if self.status is SessionStatus.OPEN:
                    self._add_job(desc)  # defined before clear_default_session(): register it in this session
                else:
                    raise SessionStateError(
                        f"job function {desc.job_name!r} belongs to a session that was cleared, and the current "
                        "session started without it; run its @flow.global_function definition again before the "
                        "first job call"
                    )
            if self.status is not _RUNNING:
                self.try_init()
            elif self.called:  # a later call runs Numba's kernels (kernels/tiered.py; a one-call script never loads
                self.runtime.tier_phase.numba = True  # type: ignore[union-attr]  # them; a failed first call left
                release_tiers()  # this off)
            # not try_init's status: a checkpoint load or flow.debug before the first call starts the session
            first, self.called = not self.called, True
            instances = call_instances(desc, arrays)  # fills desc.launch_names on the first call
            if first and start_frozen():  # its capture and lanes live as long as the runtime: frozen with it
                with paused_gc():
                    self._run_jobs(instances, desc.launch_names, desc)
            else:
                self._run_jobs(instances, desc.launch_names, desc)
            self.runtime.tier_phase.numba = True  # the calls after this one (and flow.debug's) run Numba's kernels
            watched = self._take_watched()  # this call's watched values, before another call can add any
        signature, structure = desc.signature, desc.return_structure
        if type(structure) is int and signature.returns.kind == "numpy" and not signature.is_callback:
            result = instances[len(arrays) + 1 + structure].pulled  # one returned blob: the common call
            if isinstance(result, list):  # a mirrored return (a tp.MirroredList): the blob seen consistently
                result = result.logical if result.logical is not None else numpy_return(result)
        else:
            result = call_result(desc, [instance.pulled for instance in instances[len(arrays) + 1:]])
        if watched:  # outside the lock: handlers are the user's code, and other threads may call meanwhile
            dispatch_watches(self.watch_handlers, desc, watched, result)
        return result

    def schedule_of(self, job_fn: Any) -> Schedule | None:
        """The Schedule IR (ir/schedule.py) of ``job_fn``'s call replayed last, with its fused segments and
        lanes; None before its call is captured, or when the execution policy takes no replay."""
        with self.lock:
            return schedule_of(self, job_fn)

    def schedule_payload(self, job_fn: Any) -> dict[str, Any]:
        """The execution policy and ``job_fn``'s schedules as JSON-ready data, for a front-end view."""
        with self.lock:
            return schedule_payload(self, job_fn)

    def _run_jobs(self, instances: list[JobInstance], key: tuple[str, ...] | None = None,
                  desc: FunctionDesc | None = None) -> None:
        """Run one call's instances to completion, or cancel it: either way the runtime ends idle and usable.

        A call in the main thread defers Ctrl-C to its end (call_guard.INTERRUPTS). Anything escaping the run
        (a KernelError, a KeyboardInterrupt raised some other way, a failing replay) leaves the protocol state
        unknown, so the call is cancelled: the variables it wrote are restored from the snapshot taken before it,
        and the actors and registers are thrown away and built again over the same memory blocks.
        """
        executor = self.executor
        assert executor is not None
        if not key:
            key = tuple(i.job_name for i in instances)
        guard = self._snapshots.get(key)
        if guard is None:
            live = self.variable_piece_arrays()
            guard = self._snapshots[key] = CallGuard(live, written_variables(self.plan, key), self._snapshot_copies)
        guard.taken = None
        deferring = INTERRUPTS.enter()
        # A Ctrl-C that is not deferred (an embedding owns SIGINT) can land after any act: copy every variable.
        guard.whole = not deferring and threading.get_ident() == MAIN_THREAD
        try:
            executor.run(Call(instances, key, guard.before, desc))
        except BaseException:
            cancel_then_deliver(lambda: self._cancel(guard), deferring)
            raise
        if deferring and INTERRUPTS.leave():
            # The call finished; the interrupt is raised instead of returning, so its watched values go unread
            # (they must not reach the next call's handlers).
            self.runtime.buffers[WATCH_BUFFER].clear()
            INTERRUPTS.deliver()

    def _cancel(self, guard: CallGuard) -> None:
        old = self.runtime
        assert old is not None
        self.cancelled_calls += 1
        guard.undo()
        old.stop_threads()  # a failed lanes replay leaves its lane threads parked: they go with their runtime
        old.tier_phase.retired = True  # its Numba kernels not yet made never will be (kernels/tiered.py)
        try:
            self.runtime = self._start_runtime(old.arenas)
            self.runtime.tier_phase.numba = old.tier_phase.numba  # the tier is the call's, not the runtime's
            self.runtime.hooks.extend(old.hooks)  # a user's subscribers (progress, recorders) go on receiving acts
        except BaseException:
            self.status, self.runtime = SessionStatus.CLOSED, None  # cannot happen short of running out of memory
            raise

    def _take_watched(self) -> list[tuple[str, np.ndarray]]:
        pending = self.runtime.buffers[WATCH_BUFFER]  # type: ignore[union-attr]  # a call ran on it
        if not pending:
            return []
        watched = list(pending)
        pending.clear()
        return watched

    def sync(self) -> None:
        """Wait for every launched job instance (OneFlow's Sync): every call runs to its end or is cancelled
        under the session's lock, so this waits for the calls of other threads."""
        with self.lock:
            pass

    def close(self) -> None:
        with self.lock:
            try:
                if self.status is SessionStatus.RUNNING and self.executor is not None:
                    self.executor.close()
            finally:
                self.status = SessionStatus.CLOSED
                if self.executor is not None:
                    self.executor.shutdown()  # machines in other processes (flowlab.distributed); generated calls
                for runtime in list(self._stepping_runtimes):
                    runtime.shutdown()
                thaw()  # what its start froze (job_call.paused_gc) goes back to the collector

    # -- what the session holds ----------------------------------------------------------------------
    def _compiled(self) -> CompileResult:
        if self.compiled is None:
            raise SessionStateError("the session has not compiled its jobs yet; call a job function first")
        return self.compiled

    @property
    def job_set(self) -> JobSet:
        return self._compiled().job_set

    @property
    def plan(self) -> Plan:
        return self._compiled().plan

    @property
    def passes(self) -> tuple[Any, ...]:
        return self._compiled().passes

    def variable_arrays(self) -> dict[str, np.ndarray]:
        """Live arrays of every variable (views into the runtime's memory blocks, which a cancelled call's rebuild
        keeps); on several devices, the first device's piece (``variables()`` has them all). Read or write them
        under ``session.lock`` while other threads may call jobs."""
        return {name: v.arrays[0] for name, v in self.variables().items()}

    def variable_piece_arrays(self) -> dict[str, np.ndarray]:
        """Live arrays of every device's piece of every variable, keyed ``name`` (parallel_id 0) and ``name@<p>``
        (the keys ``written_variables`` uses): what a call guard copies and puts back."""
        return {k: a for v in self.variables().values() for k, a in v.keys().items()}

    def variables(self) -> dict[str, VariablePieces]:
        """Every variable's pieces on the devices of its placement (one array on one device)."""
        if self.runtime is None:
            return {}
        self.runtime.fetch_variables()  # pieces on other machines' processes (nothing to fetch in-process)
        return variable_pieces(self.runtime)

    def __repr__(self) -> str:
        return f"<Session {self.status.value} jobs={list(self.function_descs)}>"


_default: Session | None = None
_default_lock = threading.Lock()  # two threads' first use must not make two default sessions


def default_session() -> Session:
    global _default
    session = _default
    if session is None:
        with _default_lock:
            if _default is None:
                _default = Session()
            session = _default
    return session


def clear_default_session() -> None:
    """Close the default session (if any) and open a new, empty one. The new session starts from the default
    ``flow.config`` (device counts, debug mode), as OneFlow's new Session builds a fresh ConfigProto; ``flow.env``
    settings (machines, ports, Ray) are the process's and stay."""
    global _default
    with _default_lock:
        scope.ENV.reset_session_config()
        old, _default = _default, Session()
    if old is not None:
        old.close()


def sync_default_session() -> None:
    default_session().sync()


def get_all_variables() -> dict[str, np.ndarray]:
    """Every variable's current value, as copies taken between calls (an empty dict in a session without jobs):
    local blobs (``.numpy()``, as OneFlow's), which are numpy arrays too."""
    session = default_session()
    with session.lock:
        session.try_init()
        return {name: local_blob(v.logical()) for name, v in session.variables().items()}
