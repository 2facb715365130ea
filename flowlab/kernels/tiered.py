"""Tiered kernels: a session's first call runs the NumPy reference kernels, every later call Numba's.

A fresh process waits 8-11 s for Numba to compile an MLP's kernels, and about 1 s to load Numba and its cached
kernels even when they are compiled (issue 13); the same first call on the reference kernels takes under a second.
So in the default mode (``FLOWLAB_KERNELS`` unset or ``tiered``) each CPU task's kernel is tiered: one background
thread (one for the process, ``flowlab-tiers``; it begins with the second job call, or a second after the runtime
was built) imports Numba, loads or compiles the task's Numba kernel and runs it once on scratch arrays of the
task's shapes. Only the Plan's own kernels are compiled, in task order, one job per task, so at exit the process
waits for one compile at most (the rest are dropped).

The two tiers agree within the kernel modes' tolerances, not bit for bit, so *when* a kernel switches must not
depend on timing (issue 25: two processes training the same MLP ended 6e-8 apart). The rule: **which tier an act
runs depends only on the program and the call's index: a session's first job call (with its model init) runs
every kernel on the reference tier, every later call on Numba**. The background thread only prepares the Numba
kernel; the switch happens in the act itself, on the first act of a later call (``TierPhase.numba``, set by the
Session as its second call begins), which waits for a compile still running, or makes the kernel itself when the
background has not begun it. A kernel Numba cannot make stays on the reference for good (also decided at that act,
so also by call index). Every act says which tier ran (``ActEvent.tier``, the debugger's act record);
``FLOWLAB_KERNELS=numba`` (or ``reference``) pins one tier from the first call. A kernel with state of its own
across acts (dropout's seeded stream) is not tiered: it would restart its stream on the switch.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..ir import BlobDesc
from .kernel import Kernel, KernelFn

# kernels with state across acts (a seeded stream): built as Numba kernels only, never tiered
STATEFUL = frozenset({"dropout", "random_mask_like", "bernoulli", "generate_random_batch_permutation_indices"})


class TierPhase:
    """Which tier the calls of one runtime's tiered kernels run now: the reference (``numba`` False, a session's
    first call) or Numba (True, every later call). The Session sets it at the start of a call, between acts; the
    kernels only read it, so the switch is at the same act in every run."""

    __slots__ = ("numba", "retired")

    def __init__(self, numba: bool = False) -> None:
        self.numba = numba
        # The runtime was closed or thrown away (a cleared session, a cancelled call): its kernels never act again,
        # so their background jobs not yet begun make nothing (and call no kernel factory, e.g. a test's patched one)
        self.retired = False

    def __repr__(self) -> str:
        return f"<TierPhase: {'numba' if self.numba else 'reference (first call)'}>"


class TieredKernel:
    """The state of a task's tiered kernel: the reference kernel until its first act in a later call
    (``phase.numba``) makes ``numba`` the function to run (``promote``). ``compiled`` is the Numba Kernel the
    background thread (or ``promote``) made, ``error`` why none could be made. ``ran`` is the tier of the last act
    ("reference" or "numba"); a switch never goes back. The actor calls ``kernel().fn``, a closure over it: a
    class's ``__call__`` cost 170 ns an act, the closure 60."""

    __slots__ = ("reference", "numba", "compiled", "ran", "op_name", "error", "phase", "final", "build", "lock",
                 "done", "__weakref__")

    def __init__(self, reference: KernelFn, op_name: str, phase: TierPhase, build: Callable[[], Kernel]) -> None:
        self.reference = reference
        self.numba: KernelFn | None = None  # set only by ``promote``, on the calling thread
        self.compiled: Kernel | None = None  # set by ``make``, on any thread
        self.ran: str | None = None
        self.op_name = op_name
        self.error: BaseException | None = None  # why no Numba kernel could be made: it stays on the reference
        self.phase = phase
        self.final = False  # promoted: on its last tier (Numba, or the reference when Numba's failed)
        self.build = build  # makes (and warms up) the Numba kernel
        self.lock = threading.Lock()  # one ``make`` at a time: the background thread's and a waiting act's
        self.done = False

    def make(self) -> None:
        """Make the Numba kernel unless that is done (the background job; ``promote`` when an act needs it first).
        A compile running on another thread is waited for. Raises what made it fail (once)."""
        with self.lock:
            if self.done or self.phase.retired:
                return
            try:
                self.compiled = self.build()
            except Exception as err:  # no Numba kernel (or Numba will not load): the reference serves for good
                self.error = err
                raise
            finally:  # an interrupt (not an Exception) leaves it to make again
                self.done = self.compiled is not None or self.error is not None

    def promote(self) -> KernelFn | None:
        """The first act of a later call: switch to Numba's kernel, made here if it is not yet (None: it failed,
        the reference for good)."""
        try:
            self.make()
        except Exception:  # recorded in ``error``
            pass
        self.numba, self.final = (self.compiled.fn if self.compiled is not None else None), True
        return self.numba

    def kernel(self, op_type: str) -> Kernel:
        """The task's Kernel: ``tiered`` is this state, ``fused`` builds the Numba kernel's FusedCall once
        switched (None before: replay/fused.py fuses only schedules whose kernels are all settled)."""
        state = self

        def kernel(ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> None:
            fast = state.numba
            if fast is None:
                if state.phase.numba and not state.final:  # the first act of a later call
                    fast = state.promote()
                if fast is None:
                    state.ran = "reference"
                    state.reference(ins, outs)
                    return
            state.ran = "numba"
            fast(ins, outs)

        def fused(ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> Any:
            numba = state.compiled if state.numba is not None else None
            return numba.fused(ins, outs) if numba is not None and numba.fused is not None else None

        return Kernel(kernel, op_type, "tiered", fused=fused, tiered=state)

    @property
    def settled(self) -> bool:
        """Whether the kernel is on its last tier: promoted to Numba, or to the reference for good when Numba's
        failed. Decided by an act, so by call index, never by the background thread's progress."""
        return self.final

    def __repr__(self) -> str:
        state = ("numba" if self.numba is not None else "reference" if self.final
                 else "reference, numba ready" if self.compiled is not None else "reference, compiling")
        return f"<TieredKernel {self.op_name}: {state}>"


def settled(kernel: Kernel | None) -> bool:
    """A kernel that will not change tier any more (every kernel that is not a pending tiered one)."""
    return kernel is None or kernel.tiered is None or kernel.tiered.settled


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
           make: Callable[..., Kernel], phase: TierPhase | None = None) -> Kernel:
    """The kernel of one CPU task in the tiered mode. ``make(op, in_descs, out_descs, impl)`` is
    ``registry.make_kernel``; ``phase`` the runtime's (a phase of its own, on the reference, when none is given).
    The reference kernel is built now; the Numba kernel on the background thread, or by the act that needs it."""
    if op.op_type in STATEFUL:
        return make(op, in_descs, out_descs, "numba")
    try:
        reference = make(op, in_descs, out_descs, "reference")
    except KeyError:  # an op with a Numba kernel only
        return make(op, in_descs, out_descs, "numba")

    def build() -> Kernel:
        warm = make(op, in_descs, out_descs, "numba")  # a kernel of its own: scratch arrays, no shared state
        try:
            warm.fn(scratch(in_descs), scratch(out_descs))
        except Exception:  # zeros a kernel refuses: its first real act compiles what is missing
            pass
        return make(op, in_descs, out_descs, "numba")

    kernel = TieredKernel(reference.fn, op.name, phase if phase is not None else TierPhase(), build)
    alive = weakref.ref(kernel)  # a queued build must not keep a cleared session's kernel alive (issue 25)

    def job() -> None:
        queued = alive()
        if queued is not None:  # None: its runtime was dropped while this waited; nothing to build for
            queued.make()

    _submit(job)
    return kernel.kernel(op.op_type)
