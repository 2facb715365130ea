"""``flow.eager_execution_enabled()`` and ``flow.enable_eager_execution()``: OneFlow 0.3.4 could run job
functions eagerly; flowlab is its lazy mode only (every job is traced, compiled into a Plan and run on actors), so
eager execution is always off, and asking for it is an error rather than a silent lazy run."""

from __future__ import annotations


def eager_execution_enabled() -> bool:
    """Always False: flowlab runs OneFlow's lazy mode."""
    return False


def enable_eager_execution(val: bool = True) -> None:
    """``False`` is accepted (lazy mode, flowlab's only mode); ``True`` is an error."""
    if not isinstance(val, bool):
        raise TypeError(f"flow.enable_eager_execution takes a bool; got {val!r}")
    if val:
        raise NotImplementedError(
            "flow.enable_eager_execution(True): flowlab re-implements OneFlow's lazy mode only; job functions are "
            "traced into a Job, compiled into a Plan and run on the actor runtime. Drop the call (or pass False) "
            "and call the @flow.global_function as usual")


__all__ = ["eager_execution_enabled", "enable_eager_execution"]
