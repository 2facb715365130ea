"""``flow.distribute``: SBP hints (OneFlow's ``python/framework/distribute.py``).

``split(axis)`` and ``broadcast()`` name an SBP; ``auto()`` leaves the choice to inference. They are hints, not
orders: ``blob.with_distribute(d)``, ``flow.get_variable(..., distribute=d)`` and ``flow.layers.dense(...,
model_distribute=d)`` filter the candidate signatures of the ops they touch (see ``compiler/sbp_infer.py``).
``consistent_strategy()`` / ``mirrored_strategy()`` are OneFlow's older names of the view scopes.
"""

from __future__ import annotations

from typing import Any

from .errors import OpInferError
from .frontend.scope import consistent_view, mirrored_view
from .ir.sbp import BROADCAST, SbpParallel
from .ir.sbp import split as _split


class _Auto:
    """OneFlow's AutoDistribute: no hint."""

    def __repr__(self) -> str:
        return "flow.distribute.auto()"


AUTO = _Auto()


def split(axis: int) -> SbpParallel:
    if not isinstance(axis, int) or isinstance(axis, bool) or axis < 0:
        raise ValueError(f"flow.distribute.split takes a non-negative int axis; got {axis!r}")
    return _split(axis)


def broadcast() -> SbpParallel:
    return BROADCAST


def auto() -> _Auto:
    return AUTO


def consistent_strategy() -> Any:
    return consistent_view()


def mirrored_strategy() -> Any:
    return mirrored_view()


def as_sbp_hint(distribute: Any, shape: tuple[int, ...], what: str, loc: str | None) -> SbpParallel | None:
    """The SBP a hint names (None for auto), checked against the blob's logical shape, or an error naming
    ``what`` got it and the user's line."""
    at = f"{loc}: " if loc else ""
    if distribute is None or distribute is AUTO:
        return None
    if not isinstance(distribute, SbpParallel) or distribute.is_partial_sum:
        raise OpInferError(f"{at}{what} takes flow.distribute.split(axis), broadcast() or auto(); got {distribute!r}")
    if distribute.is_split and distribute.axis >= len(shape):
        raise OpInferError(f"{at}{what}: split axis {distribute.axis} is out of range for a blob of shape "
                           f"{tuple(shape)} ({len(shape)} axes)")
    return distribute


__all__ = ["auto", "broadcast", "consistent_strategy", "mirrored_strategy", "split"]
