"""The notebook's way in: ``%load_ext flowlab`` registers the magics, and ``import flowlab`` registers the notebook's
views of debugger values with ``flow.debug`` (debug/display.py). IPython and notebook/ are imported only when one is
used, never by ``import flowlab``."""

from __future__ import annotations

from typing import Any

from .debug.display import register_view


def load_ipython_extension(ip: Any) -> None:
    from .notebook.magics import FlowMagics

    ip.register_magics(FlowMagics)


def _stuck(*args: Any, **kwargs: Any) -> Any:
    from .notebook.plan_views import show_stuck

    return show_stuck(*args, **kwargs)


def _schedule(*args: Any, **kwargs: Any) -> Any:
    from .notebook.plan_views import show_schedule

    return show_schedule(*args, **kwargs)


def _provenance(*args: Any, **kwargs: Any) -> Any:
    from .notebook.plan_views import show_provenance

    return show_provenance(*args, **kwargs)


def _rewrites(*args: Any, **kwargs: Any) -> Any:
    from .notebook.rewrites_view import show_rewrites

    return show_rewrites(*args, **kwargs)


for _name, _build in (("stuck", _stuck), ("schedule", _schedule), ("provenance", _provenance),
                      ("rewrites", _rewrites)):
    register_view(_name, _build)
