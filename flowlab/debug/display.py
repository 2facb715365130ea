"""The notebook's views of debugger values, looked up by name: ``flow.debug.show_stuck`` and friends, a
``Rewrites`` as a cell's value. The views live in notebook/, which nothing below it imports (the debugger has no
widget or view code); flowlab/_ipython.py, the notebook's one way in, registers them when flowlab is imported."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_VIEWS: dict[str, Callable[..., Any]] = {}


def register_view(name: str, build: Callable[..., Any]) -> None:
    """``show(name, ...)`` calls ``build(...)`` from now on."""
    _VIEWS[name] = build


def show(name: str, *args: Any, **kwargs: Any) -> Any:
    """The notebook output named ``name`` for ``args`` (``"stuck"``, ``"schedule"``, ``"provenance"``,
    ``"rewrites"``)."""
    build = _VIEWS.get(name)
    if build is None:
        raise LookupError(f"no notebook view {name!r} is registered (registered: {', '.join(sorted(_VIEWS)) or 'none'}"
                          "); flowlab/_ipython.py registers them when flowlab is imported")
    return build(*args, **kwargs)
