"""The debugger as a Python API (no widget code): ``flow.debug(job_fn, *args)``."""

from __future__ import annotations

from typing import Any

from .breakpoints import Breakpoint
from .debugger import ActorRow, Debugger, RunFinished, Stop, TimelineEntry
from .inspect import BlobStats, blob_stats


def debug(job_fn: Any, *args: Any, **kwargs: Any) -> Debugger:
    """Prepare one call of a ``@flow.global_function`` job for stepping: ``dbg = flow.debug(pad_Job, x)``."""
    from ..session import default_session

    desc = getattr(job_fn, "__flowlab_function_desc__", None)
    if desc is None:
        raise TypeError(f"flow.debug takes a @flow.global_function job; got {job_fn!r}")
    session = default_session()
    if session.function_descs.get(desc.job_name) is not desc:
        session.add_job(desc)
    return Debugger(session, desc, args, kwargs)


__all__ = ["ActorRow", "BlobStats", "Breakpoint", "Debugger", "RunFinished", "Stop", "TimelineEntry",
           "blob_stats", "debug"]
