"""Catch the first NaN/Inf across training (tfdbg v1's ``run -f has_inf_or_nan``, over the session's normal calls).

```python
with flow.debug.catch_nan() as catcher:
    for step, (x, y) in enumerate(batches):
        train_job(x, y)
print(catcher)                      # the step, the op and the register that first produced a NaN/Inf
catcher.debugger.continue_()        # the same call, on the debugger, stops on that op
```

Every job call inside the block runs as usual (replayed and fused once steady), then a cheap check looks at what the
call wrote: one vectorized ``np.isfinite`` over each floating register of the call's jobs (variables included,
which training updates in place). The first call that leaves a NaN/Inf there is undone (its variables put back
from a copy taken before it) and opened on a Debugger with the same inputs and a NaN and an Inf breakpoint; a
probe run of that debugger finds the act that produced the first NaN/Inf, which names the op and the register. The
call then raises ``NanCaught``, which ends the block (``catch_nan`` swallows it) with the session as before the call.

The check sees each register's bytes when the call ends: a NaN in a memory block that a later register of the same
call reuses is overwritten before the check (it shows up anyway wherever it flows: the loss, the gradients, the
updated weights). A check that sees a NaN the probe cannot reproduce (bytes of another register where memory is
reused) is counted in ``false_alarms`` and the call stands, its variables put back as it left them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..call_guard import VariableSnapshot, written_variables
from ..errors import FlowlabError
from ..frontend.signature import check_inputs
from ..runtime.variables import on_host, put
from ..session import call_instances
from .debugger import Debugger
from .stop import Stop


class NanCaught(FlowlabError):
    """A job call under ``catch_nan`` produced a NaN or an Inf; the call was undone. ``.catcher`` has the rest."""

    def __init__(self, message: str, catcher: NanCatcher) -> None:
        super().__init__(message)
        self.catcher = catcher


class NanCatcher:
    """Watches a session's job calls for NaN/Inf (see the module docstring). After a catch: ``step`` (0-based
    index of the call among those watched), ``job``, ``op``, ``actor`` ("job/op"), ``lbn``, ``regst`` (register
    desc id), ``stop`` (the probe's Stop, with the blob's statistics), ``debugger`` (restarted on the bad call with
    its breakpoints set), ``args`` (the call's inputs)."""

    def __init__(self, session: Any = None, inf: bool = True) -> None:
        from ..session import default_session

        self.session = session if session is not None else default_session()
        self.inf = inf
        self.calls = 0
        self.false_alarms = 0
        self.step: int | None = None
        self.job: str | None = None
        self.stop: Stop | None = None
        self.debugger: Debugger | None = None
        self.args: tuple[Any, ...] = ()
        self.kwargs: dict[str, Any] = {}
        self._original: Any = None
        self._shadowed = False
        self._checks: dict[tuple[str, ...], tuple[Any, VariableSnapshot, list[np.ndarray]]] = {}
        self._copies: dict[str, memoryview] = {}

    # -- the watch -----------------------------------------------------------------------------------
    def start(self) -> NanCatcher:
        if self._original is not None:
            raise FlowlabError("this catch_nan is already watching")
        self._original = self.session.lazy_run
        self._shadowed = "lazy_run" in vars(self.session)  # another watch (e.g. %%flowjob's) wraps it already
        self.session.lazy_run = self._run  # the session's one entry for job calls (magics.py does the same)
        return self

    def close(self) -> None:
        if self._original is not None:
            if self._shadowed:
                self.session.lazy_run = self._original
            else:
                del self.session.lazy_run
            self._original = None

    def __enter__(self) -> NanCatcher:
        return self.start()

    def __exit__(self, kind: Any, error: Any, tb: Any) -> bool:
        self.close()
        return isinstance(error, NanCaught) and error.catcher is self

    @property
    def caught(self) -> bool:
        return self.step is not None

    @property
    def op(self) -> str | None:
        return self.stop.op if self.stop else None

    @property
    def actor(self) -> str | None:
        return self.stop.actor if self.stop else None

    @property
    def lbn(self) -> str | None:
        return self.stop.lbn if self.stop else None

    @property
    def regst(self) -> int | None:
        return self.stop.regst if self.stop else None

    def _run(self, desc: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        session = self.session
        with session.lock:
            if session.function_descs.get(desc.job_name) is not desc:  # the session's own checks and errors
                return self._original(desc, args, kwargs)
            session.try_init()  # compiles on the first call: the check needs the Plan
            runtime, snapshot, arrays = self._check_for(desc, args, kwargs)
            snapshot.save()
            result = self._original(desc, args, kwargs)
            step = self.calls
            self.calls += 1
            if all(_finite(a, self.inf) for a in arrays):
                return result
            live = session.variable_piece_arrays()  # every device's piece, as the snapshot names them
            after = {name: on_host(live[name]).copy() for name in snapshot.names}
            snapshot.restore()
            dbg = Debugger(session, desc, args, kwargs)
            dbg.break_on(nan=True)
            if self.inf:
                dbg.break_on(inf=True)
            stop = dbg.continue_()
            if stop.reason != "breakpoint":  # not reproduced: another register's bytes in a reused block
                self.false_alarms += 1
                live = session.variable_piece_arrays()
                for name, values in after.items():
                    put(live[name], values)
                return result
            dbg.restart()
            for bp in dbg.breakpoints:
                bp.hits = 0
            self.step, self.job, self.stop, self.debugger = step, desc.job_name, stop, dbg
            self.args, self.kwargs = args, kwargs
        raise NanCaught(str(self), self)

    def _check_for(self, desc: Any, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> tuple[Any, VariableSnapshot, list[np.ndarray]]:
        """The variables the call writes (copied before it) and the floating register arrays its jobs write."""
        session = self.session
        if not desc.launch_names:
            call_instances(desc, check_inputs(desc.signature, args, kwargs, desc.device_count))  # names its jobs
        key = desc.launch_names
        cached = self._checks.get(key)
        if cached is not None and cached[0] is session.runtime:
            return cached
        plan, runtime = session.plan, session.runtime
        jobs = {plan.job_names.index(name) for name in key}
        arrays = []
        for task in plan.tasks:
            if task.job_id not in jobs:
                continue
            for produced in task.produced_regst_desc.values():
                for regst in runtime.regsts[produced.regst_desc_id]:
                    arrays += [a for a in regst.blobs.values() if a.dtype.kind == "f" and a.size]
        snapshot = VariableSnapshot(session.variable_piece_arrays(), written_variables(plan, key), self._copies)
        self._checks[key] = (runtime, snapshot, arrays)
        return runtime, snapshot, arrays

    # -- printing ------------------------------------------------------------------------------------
    def __str__(self) -> str:
        if not self.caught:
            extra = f", {self.false_alarms} false alarms" if self.false_alarms else ""
            return f"catch_nan: {self.calls} calls watched, no NaN/Inf{extra}"
        assert self.stop is not None and self.stop.blob is not None
        blob = self.stop.blob
        what = " and ".join(w for w, n in (("NaN", blob.nan_count), ("Inf", blob.inf_count)) if n) or "NaN/Inf"
        entered = " (it came in with the call's input)" if self.stop.event and \
            self.stop.event.task_type == "ForeignInput" else ""
        return (f"catch_nan: the first {what} at step {self.step} (call {self.step} of {self.job}, 0-based): "
                f"op {self.actor} wrote {self.lbn} (register r{self.regst}){entered}; {blob.nan_count} NaN, "
                f"{blob.inf_count} Inf of {blob.size}. The call was undone: the variables are as before it. "
                f"catcher.debugger.continue_() stops there.")

    def __repr__(self) -> str:
        return f"<NanCatcher {self}>"


def _finite(array: np.ndarray, inf: bool) -> bool:
    array = on_host(array)  # a GPU register is checked on a host copy
    if inf:
        return bool(np.isfinite(array).all())
    return not bool(np.isnan(array).any())


def catch_nan(session: Any = None, inf: bool = True) -> NanCatcher:
    """Watch the session's job calls for the first NaN (and Inf, unless ``inf=False``): ``with
    flow.debug.catch_nan() as catcher: ...`` or ``catcher = catch_nan().start()`` ... ``catcher.close()``."""
    return NanCatcher(session, inf)
