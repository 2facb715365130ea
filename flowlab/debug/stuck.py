"""``flow.debug.why_stuck()``: the wait-for graph of a session's runtime at any time (runtime/hang.py).

The same diagnosis a ``HangError`` carries: call it from another thread while a call seems stuck, after catching
the error, or between steps of the debugger (``Debugger.why_stuck()``).
"""

from __future__ import annotations

from typing import Any

from ..errors import SessionStateError
from ..runtime.hang import HangError, WaitGraph


def why_stuck(session: Any = None) -> WaitGraph:
    """Who waits for whom in ``session``'s runtime now (the default session's by default), a Debugger's
    runtime when given a ``flow.debug(...)`` Debugger. Printable; ``.cycle``, ``.blocked``, ``.wavefront``,
    ``.recent``, ``to_dot()``, ``to_payload()``, ``marks()`` (Plan payload node ids)."""
    if hasattr(session, "why_stuck") and hasattr(session, "runtime"):  # a Debugger
        return session.why_stuck()
    if session is None:
        from ..session import default_session

        session = default_session()
    runtime = getattr(session, "runtime", None)
    if runtime is None:
        raise SessionStateError("why_stuck: the session has no runtime yet (no job function has been called); "
                                "call one first, or use flow.debug(job_fn, ...).why_stuck() to step a call")
    return runtime.wait_graph()


__all__ = ["HangError", "WaitGraph", "why_stuck"]
