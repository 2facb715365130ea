"""Steady-state replay and fusion: an optional optimisation layer over the actor runtime.

The actor protocol is flowlab's one execution path (flowlab/runtime/). This package wraps a ``Runtime`` through
its one hook, ``runtime.layer``: the first call of a job function from an idle runtime is run by the protocol
and captured (capture.py), later calls from the same protocol state replay the captured kernel calls
(layer.py), runs of them are fused into generated Numba functions (fused.py), the protocol's bookkeeping is
written lazily, before anything reads it (settle.py), and once fused a job function's calls run through one
generated Python function around the Numba call (callgen.py). tests/replay/test_replay_proof.py proves it
bit-identical to the protocol: results, variables, watched values and every piece of protocol state
(``protocol_state``).

The Session attaches it (``attach``) as its ExecutionPolicy says (runtime/policy.py, ``print(session.execution)``):
``FLOWLAB_REPLAY=0`` leaves it off, ``FLOWLAB_FUSE=0`` keeps it from fusing and ``FLOWLAB_CALLGEN=0`` from
generating calls. ``flow.debug`` builds its runtimes without it. Nothing
here is imported until a layer is attached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..flags import get

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ..runtime.policy import ExecutionPolicy
    from .layer import ReplayLayer

__all__ = ["attach", "replay_enabled"]


def replay_enabled() -> bool:
    return get("replay")


def attach(runtime: Runtime, execution: ExecutionPolicy | None = None) -> ReplayLayer | None:
    """Attach a replay layer to ``runtime`` when the execution policy takes replay (``execution``, the session's;
    None: decided now from the flags and the runtime's Plan); return it (or None). On a runtime that runs its
    Plan's threads in parallel (several devices, runtime/threads.py) a schedule is replayed as one lane per
    compute thread, each on its own OS thread (lanes.py), so the devices keep computing at once."""
    if execution is None:
        from ..runtime.policy import decide

        execution = decide(runtime.plan)
    if not execution.replay:  # flag off, a GPU plan (its streams order it), Ray machines: runtime/policy.py says
        return None
    from .layer import ReplayLayer

    layer = ReplayLayer(runtime, fuse=execution.fuse, lanes=execution.lanes)
    layer.execution = execution  # lanes time themselves against one thread and record the verdict there
    return layer
