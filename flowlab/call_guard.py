"""What makes a failed or interrupted job call safe to survive (docs/failure-semantics.md).

- ``INTERRUPTS``: while a call runs in the main thread, SIGINT only sets a flag; the call runs to its end (a call
  is bounded) and the interrupt is then delivered as it would have been (KeyboardInterrupt under Python's default
  handler). The act-by-act protocol state is therefore never cut in half by Ctrl-C.
- ``VariableSnapshot``: copies of the variables a call writes in place (optimizer updates, optimizer state, the
  train step counter, model init/load), taken before the call. A call that fails after some update already ran
  (an update of one variable may run before the backward of another has finished) is undone from it, so the
  session keeps the variables of the last completed step.
"""

from __future__ import annotations

import _signal
import signal
import threading
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

import numpy as np

from .ir import Plan


class InterruptDeferral:
    """Defers SIGINT while a job call runs in the main thread (signal handlers only ever run there).

    A ``DeferringHandler`` is installed over whatever handler is there on the first call; when no call runs it hands the
    signal to that handler. A handler installed over it later is wrapped the same way on the next call, by a new
    wrapper, so one that is later restored still hands on to the handler it wrapped. No signal syscall happens per
    call: only a lookup of the current handler.
    """

    def __init__(self) -> None:
        self.depth = 0  # main-thread calls in progress (a watch handler may call a job)
        self.pending: Any = None  # the handler a SIGINT that arrived during the call is for

    def enter(self) -> bool:
        """Start deferring, if this is the main thread; returns whether it did (then ``leave()`` must follow)."""
        if threading.get_ident() != MAIN_THREAD:
            return False
        current = _signal.getsignal(SIGINT)  # signal.getsignal's enum conversion costs ~4 us
        if type(current) is not DeferringHandler:
            try:
                signal.signal(SIGINT, DeferringHandler(self, current))
            except (ValueError, OSError):  # an embedding that owns signals: calls are still cancelled cleanly
                return False
        self.depth += 1
        return True

    def leave(self) -> bool:
        """Stop deferring; returns whether an interrupt arrived meanwhile (then the caller, its state tidy, calls
        ``deliver()``)."""
        self.depth -= 1
        return self.depth == 0 and self.pending is not None

    def deliver(self) -> None:
        """Hand the deferred SIGINT to the handler it was meant for (Python's raises KeyboardInterrupt)."""
        target, self.pending = self.pending, None
        _deliver(target, SIGINT, None)


class DeferringHandler:
    """flowlab's SIGINT handler over ``previous``: defers during a call, else hands the signal on."""

    __slots__ = ("owner", "previous")

    def __init__(self, owner: InterruptDeferral, previous: Any) -> None:
        self.owner, self.previous = owner, previous

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.owner.depth:
            self.owner.pending = self.previous
            return
        _deliver(self.previous, signum, frame)


def _deliver(handler: Any, signum: int, frame: FrameType | None) -> None:
    if callable(handler):
        handler(signum, frame)  # Python's default handler raises KeyboardInterrupt
    elif handler != signal.SIG_IGN:  # SIG_DFL, or a handler set outside Python: Python's behaviour for Ctrl-C
        raise KeyboardInterrupt


MAIN_THREAD = threading.main_thread().ident
SIGINT = int(signal.SIGINT)
INTERRUPTS = InterruptDeferral()


def cancel_then_deliver(cancel: Callable[[], None], deferring: bool) -> None:
    """A failed call's cleanup, in its ``except`` block (the session's protocol path and a generated call's): cancel
    it, leave the interrupt deferral, and raise a Ctrl-C that arrived meanwhile: the user's stop wins over the
    error (chained to it)."""
    try:
        cancel()
    finally:
        interrupted = deferring and INTERRUPTS.leave()
    if interrupted:
        INTERRUPTS.deliver()


class VariableSnapshot:
    """Copies of some variables, taken before a call and put back if it fails. The copies are allocated once per
    launch list; a call that writes no variable (predict jobs, pushes, pulls, a save) has none and costs nothing.

    Why an eager copy before every call: a steady-state call is replayed as one fused Numba function (replay.py,
    fused.py), so there is no point between its acts at which a lazy copy-before-first-write could be taken; and
    ordering every update after every other kernel (a compile change) would still leave a failing update after
    another update. Every call writes every trained variable, so a lazy copy would cost the same anyway. A
    failing call rarely needs the copy, but it cannot be rebuilt bit for bit from what is left (an SGD step is
    not exactly invertible in floating point).

    The copies go through byte memoryviews: a slice assignment is a bare memcpy, about a third of np.copyto's
    per-array overhead, which is what a small model's snapshot costs (five arrays of a 64-32-10 MLP: ~1 us). The
    784-512-10 MLP's 1.6 MB cost ~45 us, under 2% of its ~2.4 ms step.
    """

    __slots__ = ("names", "pairs", "device_pairs")

    def __init__(self, live: dict[str, np.ndarray], names: Iterable[str], copies: dict[str, memoryview]) -> None:
        """``copies``: the session's one copy buffer per variable, shared by every launch list's snapshot (one
        call runs at a time), so the snapshots hold at most one extra copy of each written variable."""
        self.names = tuple(sorted(names))
        pairs, device_pairs = [], []
        for name in self.names:
            array = live[name]  # a C-contiguous register view into a memory block's arena
            if array.size == 0:  # nothing to keep (and a memoryview cannot cast an empty shape)
                continue
            if hasattr(array, "copy_to_device"):  # a GPU variable: its copy stays on the device
                if name not in copies:
                    copies[name] = _device_like(array)
                device_pairs.append((array, copies[name]))
                continue
            if name not in copies:
                copies[name] = memoryview(np.empty_like(array)).cast("B")
            pairs.append((memoryview(array).cast("B"), copies[name]))
        self.pairs = tuple(pairs)
        self.device_pairs = tuple(device_pairs)

    def save(self) -> None:
        for live, copy in self.pairs:
            copy[:] = live
        for dlive, dcopy in self.device_pairs:
            dcopy.copy_to_device(dlive)

    def restore(self) -> None:
        for live, copy in self.pairs:
            live[:] = copy
        for dlive, dcopy in self.device_pairs:
            dlive.copy_to_device(dcopy)

    def __repr__(self) -> str:
        size = sum(copy.nbytes for _live, copy in (*self.pairs, *self.device_pairs))
        return f"VariableSnapshot({list(self.names)}, {size} B)"


def _device_like(array: Any) -> Any:
    from .kernels.numba_cuda._cuda import cuda

    return cuda.device_array(array.shape, array.dtype)


class CallGuard:
    """The snapshot one launch list's calls take before they run, chosen per call by what runs it.

    The runtime (or its replay layer) calls ``before(names)`` once, before the call's first act: ``names`` are
    the variables a failure of this call could leave half-written, ``None`` for every variable the call writes.
    The protocol and a replay act by act pass ``None``. A fused replay knows its acts' order and which of them can
    fail (layer.py, ``guarded_variables``): a variable whose every write follows the call's last act that can
    fail is never left half-done (a failure stops the call before the write), so it is not copied. In an MLP's
    step the updates follow the label checks, and only the step counter is copied (8 bytes, not the weights'
    megabytes). ``undo()`` puts back what ``before`` copied.
    """

    __slots__ = ("live", "copies", "all", "partial", "taken", "whole")

    def __init__(self, live: dict[str, np.ndarray], names: Iterable[str], copies: dict[str, memoryview]) -> None:
        self.live, self.copies = live, copies
        self.all = VariableSnapshot(live, names, copies)
        self.partial: dict[tuple[str, ...], VariableSnapshot] = {}
        self.taken: VariableSnapshot | None = None
        self.whole = False  # copy every variable whatever ``before`` is told (the call is not shielded from Ctrl-C)

    def before(self, names: tuple[str, ...] | None = None) -> None:
        snapshot = self.all if names is None or self.whole else self.partial.get(names)
        if snapshot is None:
            snapshot = self.snapshot(names)
        snapshot.save()
        self.taken = snapshot

    def snapshot(self, names: tuple[str, ...] | None) -> VariableSnapshot:
        """The snapshot ``before(names)`` takes when the call is shielded from Ctrl-C (made once per ``names``)."""
        if names is None:
            return self.all
        snapshot = self.partial.get(names)
        if snapshot is None:
            snapshot = self.partial[names] = VariableSnapshot(self.live, set(names).intersection(self.all.names),
                                                              self.copies)
        return snapshot

    def undo(self) -> None:
        """Restore what the call's ``before`` copied (nothing if it failed before that)."""
        if self.taken is not None:
            self.taken.restore()

    def __repr__(self) -> str:
        return f"CallGuard({self.all!r}, taken={self.taken!r})"


def written_variables(plan: Plan, job_names: Iterable[str]) -> set[str]:
    """The variables that the ops of these jobs write in place (``task_writes``, over the jobs' tasks)."""
    wanted = {plan.job_names.index(name) for name in job_names}
    names: set[str] = set()
    for task_id, written in task_writes(plan).items():
        if plan.task(task_id).job_id in wanted:
            names.update(written)
    return names


def task_writes(plan: Plan) -> dict[int, tuple[str, ...]]:
    """The variables each task's op writes in place, by task id (tasks that write none are left out).

    Ops that write a variable are the ones with no outputs that are not system ops (OneFlow's *_update ops,
    assign: they mutate their inputs), plus model init and load. Every variable such an op consumes counts, which
    is a superset (an Adam update reads train_step without writing it): a superset only costs a few bytes more.
    """
    from .ops.registry import get_op_def

    variable_of = {}
    for task in plan.tasks:
        op = task.exec_sequence[0]
        if op.op_type == "variable":
            variable_of[op.output_lbns[0]] = op.name
    writes = {}
    for task in plan.tasks:
        op = task.exec_sequence[0]
        if op.op_type in ("model_init", "model_load") or (not op.output_lbns and not get_op_def(op.op_type).system):
            suffix = f"@{task.parallel_id}" if task.parallel_id else ""  # a device's piece (runtime/variables.py)
            written = tuple(sorted({variable_of[lbn] + suffix for lbn in op.input_lbns if lbn in variable_of}))
            if written:
                writes[task.task_id] = written
    return writes
