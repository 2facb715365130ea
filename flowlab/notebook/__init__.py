"""Jupyter integration: the ``%%flowjob`` magic, its result view and the widgets (``PlanBrowser``,
``DebuggerWidget``). Importing it needs IPython; the widgets need anywidget (imported on first use)."""

from typing import Any

from .magics import FlowMagics
from .result import FlowjobResult


def __getattr__(name: str) -> Any:
    if name in ("PlanBrowser", "DebuggerWidget"):
        from . import widgets

        return getattr(widgets, name)
    raise AttributeError(name)


__all__ = ["DebuggerWidget", "FlowMagics", "FlowjobResult", "PlanBrowser"]
