"""Tiered kernels: a task starts on its NumPy reference kernel and switches to its Numba kernel when that is ready.

A fresh process waits 8-11 s for Numba to compile an MLP's kernels, and about 1 s to load Numba and its cached
kernels even when they are compiled (issue 13); the same first call on the reference kernels takes under a second.
So in the default mode (``FLOWLAB_KERNELS`` unset or ``tiered``) each CPU task's kernel is tiered: it runs the
reference kernel until one background thread (one for the process, ``flowlab-tiers``; it begins with the second
job call, or a second after the runtime was built) has imported Numba, loaded or compiled that task's Numba kernel
and run it once on scratch arrays of the task's shapes, and from then on runs the Numba kernel. Only the Plan's own
kernels are compiled, in task order, one job per task, so at exit the process waits for one compile at most (the
rest are dropped).

The two tiers agree within the kernel modes' tolerances (tests/ops/test_kernel_nan_agreement.py and the op
tables run both), not bit for bit: a run's results depend on when each switch happened. Every act says which tier
ran (``ActEvent.tier``, the debugger's act record), and ``FLOWLAB_KERNELS=numba`` (or ``reference``) pins one tier
for runs that must be reproducible bit for bit (benchmarks, the test suite). A kernel with state of its own across
acts (dropout's seeded stream) is not tiered: it would restart its stream on the switch.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..ir import BlobDesc

STATEFUL = frozenset({"dropout"})  # kernels with state across acts: built as Numba kernels only, never tiered


class TieredKernel:
    """The state of a task's tiered kernel: the reference kernel until ``numba`` is set (by the background
    thread), then Numba's. ``ran`` is the tier of the last act ("reference" or "numba"); a switch never goes back.
    The actor calls ``function()``, a closure over it: a class's ``__call__`` cost 170 ns an act, the closure 60."""

    __slots__ = ("reference", "numba", "ran", "op_name", "error", "__weakref__")

    def __init__(self, reference: Callable[..., None], op_name: str) -> None:
        self.reference = reference
        self.numba: Callable[..., None] | None = None
        self.ran: str | None = None
        self.op_name = op_name
        self.error: BaseException | None = None  # why no Numba kernel could be made: it stays on the reference

    def function(self) -> Callable[[Sequence[np.ndarray], Sequence[np.ndarray]], None]:
        """The kernel function; ``.tiered`` is this state, ``.fused`` the Numba kernel's FusedCall builder once
        switched (None before: replay/fused.py fuses only schedules whose kernels are all settled)."""
        state = self

        def kernel(ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> None:
            fast = state.numba  # read once: the background thread may set it between two acts, never within one
            if fast is None:
                state.ran = "reference"
                state.reference(ins, outs)
            else:
                state.ran = "numba"
                fast(ins, outs)

        def fused(ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> Any:
            build = getattr(state.numba, "fused", None)
            return build(ins, outs) if build is not None else None

        kernel.tiered = state  # type: ignore[attr-defined]
        kernel.fused = fused  # type: ignore[attr-defined]
        return kernel

    @property
    def settled(self) -> bool:
        """Whether the kernel is on its last tier: Numba, or the reference for good when Numba's failed."""
        return self.numba is not None or self.error is not None

    def __repr__(self) -> str:
        state = ("numba" if self.numba is not None else "reference" if self.error is not None
                 else "reference, compiling")
        return f"<TieredKernel {self.op_name}: {state}>"


def tier_of(kernel: Any) -> TieredKernel | None:
    """The tiered state of an actor's kernel (None: not a tiered kernel)."""
    return getattr(kernel, "tiered", None)


def settled(kernel: Any) -> bool:
    """A kernel that will not change tier any more (every kernel that is not a pending tiered one)."""
    state = getattr(kernel, "tiered", None)
    return state is None or state.settled


_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()
_pending: set[Future[None]] = set()
# The background work starts when a second job call begins (``release``, from the Session) or START_AFTER seconds
# after the first kernel was tiered, whichever comes first: importing Numba and loading kernels is Python code that
# holds the GIL, and on the first call's own time it cost as much as the call (2 s of a 3.8 s start, load 7); and a
# script that makes one call and exits does not wait at exit for Numba to load (the running job is joined).
START_AFTER = 1.0
_held: list[Callable[[], None]] = []
_released = False


def _submit(job: Callable[[], None]) -> None:
    with _lock:
        if not _released:
            if not _held:
                timer = threading.Timer(START_AFTER, release)
                timer.daemon = True
                timer.start()
            _held.append(job)
            return
    _start(job)


def release() -> None:
    """Let the background thread begin (a no-op once it has): a second call begins, or the first has run long."""
    global _released
    if _released:
        return
    with _lock:
        _released, jobs = True, list(_held)
        _held.clear()
    for job in jobs:
        _start(job)


def _start(job: Callable[[], None]) -> Future[None] | None:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowlab-tiers")
            # at exit, drop the compiles not yet begun (the running one is joined: a cache file is never cut off)
            register = getattr(threading, "_register_atexit", None)
            if register is not None:
                register(lambda executor=_executor: executor.shutdown(wait=False, cancel_futures=True))
        try:
            future = _executor.submit(job)
        except RuntimeError:  # the interpreter is exiting (the START_AFTER timer fired late): nothing to load for
            return None
        _pending.add(future)
    future.add_done_callback(_pending.discard)
    return future


def wait_tiers(timeout: float | None = None) -> None:
    """Start the background work now and wait until every Numba kernel submitted so far is ready (tests and
    benchmarks)."""
    release()
    for future in list(_pending):
        future.exception(timeout)


def scratch(descs: Sequence[BlobDesc]) -> list[np.ndarray]:
    """Zeroed arrays of the task's shapes and dtypes: the warm-up call compiles exactly the signatures the
    task's register arrays (C-contiguous views of the arenas) will call."""
    return [np.zeros(d.shape, d.dtype.np) for d in descs]


def tiered(op: Any, in_descs: Sequence[BlobDesc], out_descs: Sequence[BlobDesc],
           make: Callable[..., Callable[..., None]]) -> Callable[..., None]:
    """The kernel of one CPU task in the tiered mode. ``make(op, in_descs, out_descs, impl)`` is
    ``registry.make_kernel``. The reference kernel is built now; the Numba kernel on the background thread."""
    if op.op_type in STATEFUL:
        return make(op, in_descs, out_descs, "numba")
    try:
        reference = make(op, in_descs, out_descs, "reference")
    except KeyError:  # an op with a Numba kernel only
        return make(op, in_descs, out_descs, "numba")
    kernel = TieredKernel(reference, op.name)
    alive = weakref.ref(kernel)  # a queued build must not keep a cleared session's kernel (issue 25)

    def job() -> None:
        kernel = alive()
        if kernel is None:  # its runtime is gone (the session was cleared while this waited): nothing to build for
            return
        try:
            warm = make(op, in_descs, out_descs, "numba")  # a kernel of its own: scratch arrays, no shared state
            try:
                warm(scratch(in_descs), scratch(out_descs))
            except Exception:  # zeros a kernel refuses: its first real act compiles what is missing
                pass
            kernel.numba = make(op, in_descs, out_descs, "numba")
        except BaseException as err:  # no Numba kernel (or Numba will not load): the reference serves for good
            kernel.error = err
            raise

    _submit(job)
    return kernel.function()
