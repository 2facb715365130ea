"""The Session: OPEN -> RUNNING -> CLOSED. Ties the front end, the compiler and the runtime together.

All registered job functions are traced and compiled together on the first call of any of them (OneFlow's
TryInit); later calls only run. The default session is made on first use, never at import.
"""

from __future__ import annotations

import enum
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import replay
from .compiler import CompileResult, check_plan, compile_jobs
from .compiler.system_jobs import PATH_CAPACITY, pull_job_name, push_job_name
from .errors import KernelError, SessionStateError
from .frontend import scope
from .frontend.function import FunctionDesc, InterfaceCounter, trace
from .frontend.signature import check_inputs, unflatten
from .ir import Job, JobSet, Plan
from .ir.dtype import from_numpy
from .runtime import JobInstance, Runtime
from .runtime.checkpoint_io import CheckpointError, load_variable, variable_dir
from .runtime.system_kernels import WATCH_BUFFER


class SessionStatus(enum.Enum):
    OPEN = "OPEN"
    RUNNING = "RUNNING"
    CLOSED = "CLOSED"


class Session:
    def __init__(self) -> None:
        self.status = SessionStatus.OPEN
        self.function_descs: dict[str, FunctionDesc] = {}
        self.traced_jobs: dict[str, Job] = {}  # user jobs as traced, before any pass
        self.compiled: CompileResult | None = None
        self.runtime: Runtime | None = None
        self.compile_seconds = 0.0
        self._running_instances: list[JobInstance] = []
        self.watch_handlers: dict[str, Any] = {}
        self.partial_jobs: dict[str, Job] = {}

    # -- registration ------------------------------------------------------------------------------
    def add_job(self, desc: FunctionDesc) -> None:
        if self.status is not SessionStatus.OPEN:
            raise SessionStateError(
                f"cannot add job function {desc.job_name!r}: the session is {self.status.value} (its jobs were "
                "compiled on the first job call). Call flow.clear_default_session() first, then define the job "
                "functions again."
            )
        self.function_descs[desc.job_name] = desc  # redefining a function while OPEN replaces it

    # -- start -------------------------------------------------------------------------------------
    def try_init(self) -> None:
        if self.status is SessionStatus.OPEN:
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
        compiled = compile_jobs(list(traced.values()), scope.ENV.cpu_device_num)
        check_plan(compiled.plan)
        runtime = Runtime(compiled.plan)
        replay.attach(runtime)  # the optional replay layer (FLOWLAB_REPLAY=0: none); flow.debug's runtimes have none
        self.traced_jobs, self.compiled, self.runtime = traced, compiled, runtime
        self.watch_handlers = handlers
        self.compile_seconds = time.perf_counter() - start
        self.status = SessionStatus.RUNNING
        if scope.ENV.debug_mode or os.environ.get("FLOWLAB_DEBUG_MODE"):
            from .viz.dump import dump_debug_files

            dump_debug_files(self)
        self.init_variables()

    def init_variables(self) -> None:
        """Run System-ModelInit: every variable gets its initializer's values."""
        if "System-ModelInit" in self.plan.job_names:
            self._run_jobs([JobInstance("System-ModelInit")])

    def save_checkpoint(self, root: Path) -> None:
        """Run System-ModelSave into ``root`` (new or empty, as OneFlow requires), then mark it done."""
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise CheckpointError(f"checkpoint directory {root} is not empty; OneFlow refuses to save into a "
                                  "non-empty directory, so choose a new one")
        if "System-ModelSave" not in self.plan.job_names:
            raise CheckpointError("the session's jobs have no variables to save")
        for name in self.variable_arrays():
            variable_dir(root, name)  # a name escaping the directory fails before anything is written
        root.mkdir(parents=True, exist_ok=True)
        self._run_jobs([JobInstance("System-ModelSave", push_array=encode_path(root))])
        (root / "snapshot_done").touch()

    def load_checkpoint(self, root: Path) -> None:
        """Check every variable's files first, then run System-ModelLoad (nothing is half-loaded)."""
        if not root.is_dir():
            raise CheckpointError(f"checkpoint directory {root} does not exist")
        arrays = self.variable_arrays()
        if not arrays:
            raise CheckpointError("the session's jobs have no variables to load")
        for name, array in arrays.items():
            load_variable(root, name, array.shape, from_numpy(array.dtype))  # raises on any mismatch
        self._run_jobs([JobInstance("System-ModelLoad", push_array=encode_path(root))])

    # -- running -----------------------------------------------------------------------------------
    def lazy_run(self, desc: FunctionDesc, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.function_descs.get(desc.job_name) is not desc:
            if self.status is SessionStatus.OPEN:
                self.add_job(desc)  # defined before clear_default_session(): register it in this session
            else:
                raise SessionStateError(
                    f"job function {desc.job_name!r} belongs to a session that was cleared, and the current session "
                    "started without it; run its @flow.global_function definition again before the first job call"
                )
        arrays = check_inputs(desc.signature, args, kwargs)  # bad input fails before anything is launched
        self.try_init()
        pulled: list[np.ndarray] = [None] * len(desc.return_op_names)  # type: ignore[list-item]
        instances = call_instances(desc, arrays, pulled)  # fills desc.launch_names on the first call
        self._run_jobs(instances, desc.launch_names)
        result = unflatten(desc.signature.returns, desc.return_structure, pulled)
        if desc.signature.returns.kind == "future":
            result = FutureRemoteBlobs(result)
        if desc.signature.is_callback:
            return _callback_caller(result)
        return result

    def _run_jobs(self, instances: list[JobInstance], key: tuple[str, ...] | None = None) -> None:
        assert self.runtime is not None
        try:
            self.runtime.run_call(instances, key)
        except KernelError:
            # The failed act changed nothing, but its job cannot finish: stop here rather than hang later.
            self.status = SessionStatus.CLOSED
            self.runtime = None
            raise
        except BaseException:  # an interrupt mid-call: sync() waits for what was launched
            self._running_instances.extend(i for i in instances if not i.finished)
            raise
        if self.runtime.buffers[WATCH_BUFFER]:
            self._dispatch_watches()

    def _dispatch_watches(self) -> None:
        """Hand watched blobs to their handlers, after the run (a handler that raises cannot break an act)."""
        assert self.runtime is not None
        pending = self.runtime.buffers[WATCH_BUFFER]
        while pending:
            uuid, array = pending.popleft()
            self.watch_handlers[uuid](array)

    def sync(self) -> None:
        """Wait for every launched job instance (OneFlow's Sync)."""
        if self.runtime is not None and self._running_instances:
            self.runtime.run_until(lambda: all(i.finished for i in self._running_instances))
            self._running_instances.clear()

    def close(self) -> None:
        if self.status is SessionStatus.RUNNING and self.runtime is not None:
            self.sync()
            self.runtime.close()
        self.status = SessionStatus.CLOSED

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
        """Live arrays of every variable (views into the runtime's memory)."""
        if self.runtime is None:
            return {}
        out = {}
        for task in self.plan.tasks:
            op = task.exec_sequence[0]
            if op.op_type == "variable" and op.name not in out:
                regst_id = task.produced_regst_desc["out"].regst_desc_id
                out[op.name] = self.runtime.regsts[regst_id][0].blobs[op.output_lbns[0]]
        return out

    def __repr__(self) -> str:
        return f"<Session {self.status.value} jobs={list(self.function_descs)}>"


def encode_path(root: Path) -> np.ndarray:
    """A path as the NUL-padded UTF-8 blob the model-io jobs' ForeignInput carries."""
    raw = str(root.resolve()).encode("utf-8")
    if len(raw) >= PATH_CAPACITY:
        raise CheckpointError(f"checkpoint path is {len(raw)} bytes long; at most {PATH_CAPACITY - 1} fit")
    blob = np.zeros(PATH_CAPACITY, np.uint8)
    blob[: len(raw)] = np.frombuffer(raw, np.uint8)
    return blob


def call_instances(desc: FunctionDesc, arrays: list[np.ndarray], pulled: list[np.ndarray]) -> list[JobInstance]:
    """One call of a job function as OneFlow launches it: a push job per input, the job, a pull job per return."""
    if not desc.launch_names:
        desc.launch_names = (*(push_job_name(n) for n in desc.input_op_names), desc.job_name,
                             *(pull_job_name(n) for n in desc.return_op_names))
    names, pushes = desc.launch_names, len(arrays)
    instances = [JobInstance(names[i], arrays[i]) for i in range(pushes)]
    instances.append(JobInstance(desc.job_name))
    instances += [JobInstance(names[pushes + 1 + i], on_pull=_store(pulled, i)) for i in range(len(pulled))]
    return instances


def _store(pulled: list[np.ndarray], index: int) -> Callable[[np.ndarray], None]:
    def store(array: np.ndarray) -> None:
        pulled[index] = array

    return store


def _callback_caller(result: Any) -> Callable[[Callable[[Any], None]], None]:
    """``tp.Callback[T]``: the call returns ``f``; ``f(cb)`` calls ``cb(result)`` (the pull is complete)."""

    def register(callback: Callable[[Any], None]) -> None:
        if not callable(callback):
            raise TypeError(f"a tp.Callback job returns a function that takes a callable; got {callback!r}")
        callback(result)

    return register


class FutureRemoteBlobs:
    """The result of a job function without annotations (OneFlow's LazyFutureRemoteBlobs)."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def get(self) -> Any:
        return self._value

    def async_get(self, callback: Callable[[Any], None]) -> None:
        callback(self._value)


_default: Session | None = None


def default_session() -> Session:
    global _default
    if _default is None:
        _default = Session()
    return _default


def clear_default_session() -> None:
    """Close the default session (if any) and open a new, empty one."""
    global _default
    if _default is not None:
        _default.close()
    _default = Session()


def sync_default_session() -> None:
    default_session().sync()


def get_all_variables() -> dict[str, np.ndarray]:
    """Every variable's current value, as copies (starts the session if it has not started)."""
    session = default_session()
    session.try_init()
    return {name: array.copy() for name, array in session.variable_arrays().items()}
