"""The debugger as a Python API (no widget code): ``flow.debug(job_fn, *args)``."""

from __future__ import annotations

from typing import Any

from . import display
from .backend_diff import BackendDiff, backend_diff
from .breakpoints import Breakpoint
from .comparison import Comparison, compare
from .debugger import ActorRow, Debugger, RunFinished, Stop, TimelineEntry
from .diff import PlanDiff, diff
from .history import HistoryStats
from .inspect import BlobStats, blob_stats
from .nan_watch import NanCatcher, NanCaught, catch_nan
from .overlay import Overlay, overlay
from .recording import Lifetime, Memory, Recording
from .rewrites import Rewrite, Rewrites, rewrites
from .stuck import HangError, WaitGraph, why_stuck


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


def show_rewrites(what: Any, index: int = 0) -> Any:
    """A stepper (←/→) through every rewrite of a compile, each drawn as the compare view draws a diff:
    ``flow.debug.show_rewrites(session)`` (see notebook/rewrites_view.py)."""
    return rewrites(what).show(index)


def show_stuck(what: Any = None, **kwargs: Any) -> Any:
    """A hang drawn on the Plan (blocked actors by kind, the wait-for edges, the cycle in view):
    ``flow.debug.show_stuck(session)``, ``show_stuck(err)`` for a HangError (see notebook/plan_views.py)."""
    return display.show("stuck", what, **kwargs)


def show_schedule(session: Any = None, job_fn: Any = None) -> Any:
    """A job function's captured Schedule (fused segments, lanes) beside its Plan, with the execution policy:
    ``flow.debug.show_schedule(session, job_fn)`` or ``show_schedule(job_fn)`` (see notebook/plan_views.py)."""
    return display.show("schedule", session, job_fn)


def show_provenance(what: Any = None) -> Any:
    """The Plan whose tasks' detail panes link to the rewrite that made each ("made by #k"), opening the rewrites
    stepper there: ``flow.debug.show_provenance(session)`` (see notebook/plan_views.py)."""
    return display.show("provenance", what)


# ``flow.debug`` is this function; its helpers hang on it: ``flow.debug.catch_nan()``, ``flow.debug.diff(a, b)``.
debug.catch_nan = catch_nan  # type: ignore[attr-defined]
debug.diff = diff  # type: ignore[attr-defined]
debug.compare = compare  # type: ignore[attr-defined]
debug.NanCaught = NanCaught  # type: ignore[attr-defined]
debug.why_stuck = why_stuck  # type: ignore[attr-defined]
debug.HangError = HangError  # type: ignore[attr-defined]
debug.overlay = overlay  # type: ignore[attr-defined]
debug.Overlay = Overlay  # type: ignore[attr-defined]
debug.backend_diff = backend_diff  # type: ignore[attr-defined]
debug.rewrites = rewrites  # type: ignore[attr-defined]
debug.show_rewrites = show_rewrites  # type: ignore[attr-defined]
debug.show_stuck = show_stuck  # type: ignore[attr-defined]
debug.show_schedule = show_schedule  # type: ignore[attr-defined]
debug.show_provenance = show_provenance  # type: ignore[attr-defined]


__all__ = ["ActorRow", "BackendDiff", "BlobStats", "Breakpoint", "Comparison", "Debugger", "HangError",
           "HistoryStats", "Lifetime", "Memory", "NanCatcher", "NanCaught", "Overlay", "PlanDiff", "Recording",
           "Rewrite", "Rewrites", "RunFinished", "Stop", "TimelineEntry", "WaitGraph", "backend_diff", "blob_stats",
           "catch_nan", "compare", "debug", "diff", "overlay", "rewrites", "show_provenance", "show_rewrites",
           "show_schedule", "show_stuck", "why_stuck"]
