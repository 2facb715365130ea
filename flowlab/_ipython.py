"""``%load_ext flowlab``: registers the magics (IPython is imported only here, never by ``import flowlab``)."""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ip: Any) -> None:
    from .notebook.magics import FlowMagics

    ip.register_magics(FlowMagics)
