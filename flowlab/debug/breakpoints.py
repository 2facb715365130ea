"""Breakpoints: on an actor, an op or a job (before it acts), or on a produced blob (after the act)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

KINDS = ("actor", "op", "job", "nan", "inf", "predicate")


@dataclass
class Breakpoint:
    id: int
    kind: str  # one of KINDS
    target: str | None  # actor "job/op", op name, job name; for blob kinds an lbn, or None for any blob
    predicate: Callable[[np.ndarray], bool] | None = None
    enabled: bool = True
    hits: int = 0
    temporary: bool = False

    @property
    def before_act(self) -> bool:
        return self.kind in ("actor", "op", "job")

    def blob_matches(self, lbn: str, array: np.ndarray) -> bool:
        if self.target is not None and lbn != self.target:
            return False
        if self.kind == "nan":
            return np.issubdtype(array.dtype, np.floating) and bool(np.isnan(array).any())
        if self.kind == "inf":
            return np.issubdtype(array.dtype, np.floating) and bool(np.isinf(array).any())
        assert self.predicate is not None
        return bool(self.predicate(array))

    def __str__(self) -> str:
        what = {"nan": "a NaN in", "inf": "an Inf in", "predicate": "predicate on"}.get(self.kind, self.kind)
        target = self.target or "any produced blob"
        return f"breakpoint {self.id}: {what} {target}" + ("" if self.enabled else " (disabled)")
