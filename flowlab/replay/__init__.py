"""Steady-state replay and fusion: an optional optimisation layer over the actor runtime.

The actor protocol is flowlab's one execution path (flowlab/runtime/). This package wraps a ``Runtime`` through
its one hook, ``runtime.layer``: the first call of a job function from an idle runtime is run by the protocol
and captured (capture.py), later calls from the same protocol state replay the captured kernel calls
(layer.py), runs of them are fused into generated Numba functions (fused.py), the protocol's bookkeeping is
written lazily, before anything reads it (settle.py), and once fused a job function's calls run through one
generated Python function around the Numba call (callgen.py). tests/replay/test_replay_proof.py proves it
bit-identical to the protocol: results, variables, watched values and every piece of protocol state
(``protocol_state``).

The Session runs its calls on the replay executor (executor.py) when its ExecutionPolicy takes replay
(runtime/policy.py, ``print(session.execution)``; flowlab/call_path.make_executor): the flags replay, fuse and
callgen say whether. ``flow.debug`` steps the protocol. Nothing here is imported until the policy takes replay.
"""

from __future__ import annotations

from ..flags import get

__all__ = ["replay_enabled"]


def replay_enabled() -> bool:
    return get("replay")
