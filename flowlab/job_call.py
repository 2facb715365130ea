"""One call of a job function, outside the Session: the job instances it launches (a push job per input, the job,
a pull job per return, as OneFlow launches them), the result its return annotation asks for, and the hand-off of
its watched blobs to their handlers. The session's call path (session.py), the debugger and the generated calls
(replay/callgen.py) share these.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .compiler.system_jobs import pull_job_name, push_job_name
from .errors import WatchHandlerError
from .frontend.function import FunctionDesc
from .frontend.signature import unflatten
from .runtime import JobInstance


def call_instances(desc: FunctionDesc, arrays: list[np.ndarray],
                   pulled: list[np.ndarray] | None = None) -> list[JobInstance]:
    """One call of a job function as OneFlow launches it: a push job per input, the job, a pull job per return.
    Each pull instance keeps its copy (``instance.pulled``), and also stores it into ``pulled`` when given."""
    if not desc.launch_names:
        desc.launch_names = (*(push_job_name(n) for n in desc.input_op_names), desc.job_name,
                             *(pull_job_name(n) for n in desc.return_op_names))
    names, pushes = desc.launch_names, len(arrays)
    instances = [JobInstance(name, array) for name, array in zip(names, arrays)]
    if pulled is None:
        instances += [JobInstance(name) for name in names[pushes:]]  # the job itself, then its pulls
    else:
        instances.append(JobInstance(desc.job_name))
        instances += [JobInstance(names[pushes + 1 + i], on_pull=_store(pulled, i)) for i in range(len(pulled))]
    return instances


def _store(pulled: list[np.ndarray], index: int) -> Callable[[np.ndarray], None]:
    def store(array: np.ndarray) -> None:
        pulled[index] = array

    return store


def call_result(desc: FunctionDesc, pulled: list[Any]) -> Any:
    """A call's result from its pulled arrays (in pull order), as the job function's return annotation asks."""
    returns = desc.signature.returns
    result = unflatten(returns, desc.return_structure, pulled)
    if returns.kind == "future":
        result = FutureRemoteBlobs(result)
    if desc.signature.is_callback:
        result = _callback_caller(result)
    return result


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


def dispatch_watches(handlers: dict[str, Any], desc: FunctionDesc, watched: list[tuple[str, np.ndarray]],
                     result: Any) -> None:
    """Hand watched blobs to their handlers, after the run. Every handler gets its value even if an earlier
    one raises; then the handlers' exceptions are raised as one WatchHandlerError that carries the call's
    result (a KeyboardInterrupt or other BaseException from a handler propagates at once)."""
    errors: list[Exception] = []
    failed = []
    for uuid, array in watched:
        handler = handlers[uuid]
        try:
            handler(array)
        except Exception as err:
            errors.append(err)
            failed.append(getattr(handler, "__qualname__", repr(handler)))
    if errors:
        first = errors[0]
        plural = "s" * (len(errors) != 1)
        raise WatchHandlerError(
            f"{len(errors)} watch handler{plural} of job {desc.job_name!r} raised (the first, "
            f"{failed[0]}: {type(first).__name__}: {first}); every watch handler of the call got its value, "
            "and the call's result is this error's .result", result, errors) from first


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a session starts (trace, compile, verify, the runtime, the variables'
    initialization) or a big start's first call runs (``start_frozen``); what a big start made is then frozen
    (``gc.freeze``): out of the collector's generations, so that no later collection walks it again, until the
    session closes (``thaw``).

    A start allocates some 80 objects a task that all stay alive as long as the session (the Plan, the runtime).
    Each full collection during the start walked every one of them again (9 of them, 0.9 s of a 5,500-task first
    call's 2.9 s CPU); with the pause alone they still met the collector afterwards, three times each as they
    aged through the generations, in the first step (2.3 s of the 16,310-task first call's 6.6 s CPU). Frozen,
    they are freed by reference counting as ever, and the cyclic garbage a start leaves (some 600 objects) waits
    for the close, whose one collection walks everything the collector tracks (``thaw``). That walk pays only
    where the start made more objects than the collector tracked before it (``worth_freezing``): a small job's
    start, in a process with more objects than it makes, never set off those collections, and a close that
    collected would cost each cleared session a full collection (100 ms a cycle of redefining an MLP job, 3x).
    Nothing is frozen after a start that failed, nor while anything else holds frozen objects (another
    library's ``gc.freeze``): then the pause alone, as before."""
    global _FROZEN
    if not gc.isenabled():  # paused already (a first call inside a first call's watch handler), or by the user
        yield
        return
    gc.disable()
    try:
        yield
        if _FROZEN or (not gc.get_freeze_count() and worth_freezing()):
            gc.freeze()
            _FROZEN = True
    finally:
        gc.enable()


FREEZE_FLOOR = 50_000  # objects (some 600 tasks): below, a start is not worth counting what the collector tracks


def worth_freezing() -> bool:
    """Whether freezing what a paused start made saves the collector work: the objects made outnumber those
    tracked before (then they set off full collections, three walks of them, against the close's one walk of
    everything). Generation 0's count is the objects made since the pause began, less those freed, as no
    collection ran; counting the tracked ones lists them, so only a start past FREEZE_FLOOR does."""
    made = gc.get_count()[0]
    return made > FREEZE_FLOOR and made > len(gc.get_objects()) - made


_FROZEN = False  # whether paused_gc froze objects that thaw has not given back yet


def start_frozen() -> bool:
    """Whether a start's objects are frozen (paused_gc): then its first step is paused and frozen too. Its capture
    and lanes (300,000 objects for the 16,310-task job) would otherwise set off full collections against the few
    objects left in the generations. A small start's first step runs as any call: paused, its garbage would wait
    for the next full collection, which the cleared sessions' garbage then also waits for (RSS grew 0.09 MiB a
    cycle of redefining a small MLP job)."""
    return _FROZEN


def thaw() -> None:
    """Give the objects paused_gc froze back to the collector, and collect (a session closes: its Plan and runtime
    may now be cyclic garbage). Everything frozen since goes with them: gc has one frozen set. Unfrozen objects
    join the oldest generation, which is collected only after many new objects have aged into it, and the next
    session's start would freeze them again (garbage kept for good: 2.3 MiB a cycle of redefining an MLP job)."""
    global _FROZEN
    if _FROZEN:
        _FROZEN = False
        gc.unfreeze()
        if gc.isenabled():
            gc.collect()
