"""``flow.distribute``: SBP hints (OneFlow's ``python/framework/distribute.py``).

``split(axis)`` and ``broadcast()`` name an SBP; ``auto()`` leaves the choice to inference. They are hints, not
orders: ``blob.with_distribute(d)``, ``flow.get_variable(..., distribute=d)`` and ``flow.layers.dense(...,
model_distribute=d)`` filter the candidate signatures of the ops they touch (see ``compiler/sbp_infer.py``).
``consistent_strategy()`` / ``mirrored_strategy()`` are OneFlow's older names of the view scopes.
"""

from __future__ import annotations

from typing import Any

from .frontend.hints import AUTO, AutoHint
from .frontend.scope import consistent_view, mirrored_view
from .ir.sbp import BROADCAST, SbpParallel
from .ir.sbp import split as _split


def split(axis: int) -> SbpParallel:
    if not isinstance(axis, int) or isinstance(axis, bool) or axis < 0:
        raise ValueError(f"flow.distribute.split takes a non-negative int axis; got {axis!r}")
    return _split(axis)


def broadcast() -> SbpParallel:
    return BROADCAST


def auto() -> AutoHint:
    return AUTO


def consistent_strategy() -> Any:
    return consistent_view()


def mirrored_strategy() -> Any:
    return mirrored_view()


__all__ = ["auto", "broadcast", "consistent_strategy", "mirrored_strategy", "split"]
