"""``flow.train.CheckPoint``: OneFlow's older checkpoint object, on top of ``flow.checkpoint``."""

from __future__ import annotations

import os

from . import checkpoint
from .session import default_session


class CheckPoint:
    def init(self) -> None:
        """Initialize every variable again (runs System-ModelInit)."""
        session = default_session()
        session.try_init()
        session.init_variables()

    def save(self, path: str | os.PathLike[str]) -> None:
        checkpoint.save(path)

    def load(self, path: str | os.PathLike[str]) -> None:
        checkpoint.load(path)
