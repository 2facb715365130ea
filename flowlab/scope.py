"""``flow.scope``: placement and name scopes."""

from .frontend.scope import consistent_view, mirrored_view, namespace, placement

__all__ = ["consistent_view", "mirrored_view", "namespace", "placement"]
