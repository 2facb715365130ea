"""Jupyter integration: the ``%%flowjob`` magic, its result view, the widgets (``PlanBrowser``,
``DebuggerWidget``) and widget-free outputs (``show_plan``, ``show_run``, ``show_diff``). Importing it needs
IPython; the widgets need anywidget (imported on first use)."""

from typing import Any

from .compare import CompareView, show_diff, show_pass
from .magics import FlowMagics
from .result import FlowjobResult
from .views import PayloadView, show_jobset, show_plan, show_run


def __getattr__(name: str) -> Any:
    if name in ("PlanBrowser", "DebuggerWidget"):
        from . import widgets

        return getattr(widgets, name)
    raise AttributeError(name)


__all__ = ["CompareView", "DebuggerWidget", "FlowMagics", "FlowjobResult", "PayloadView", "PlanBrowser", "show_diff",
           "show_jobset", "show_pass", "show_plan", "show_run"]
