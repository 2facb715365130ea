"""``flow.scope``: placement and name scopes."""

from .frontend.scope import namespace, placement

__all__ = ["namespace", "placement"]
