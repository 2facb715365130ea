"""SBP hints as the front end holds them: ``flow.distribute.auto()`` and the check of a hint against a blob."""

from __future__ import annotations

from typing import Any

from ..errors import OpInferError
from ..ir.sbp import SbpParallel


class AutoHint:
    """OneFlow's AutoDistribute: no hint."""

    def __repr__(self) -> str:
        return "flow.distribute.auto()"


AUTO = AutoHint()


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
