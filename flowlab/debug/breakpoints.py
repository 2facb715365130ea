"""Breakpoints: on an actor, an op or a job (before it acts), or on a produced blob (after the act that wrote it:
any write of a named blob, a NaN, an Inf, or a predicate over the values)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

KINDS = ("actor", "op", "job", "blob", "nan", "inf", "predicate")
BEFORE_ACT = ("actor", "op", "job")


@dataclass
class Breakpoint:
    id: int
    kind: str  # one of KINDS
    target: str | None  # actor "job/op", op name, job name; for blob kinds an lbn, or None for any blob
    predicate: Callable[[np.ndarray], bool] | None = None
    enabled: bool = True
    hits: int = 0
    temporary: bool = False  # run_to's own: not listed, removed when run_to returns

    @property
    def before_act(self) -> bool:
        return self.kind in BEFORE_ACT

    def blob_matches(self, lbn: str, array: np.ndarray) -> bool:
        if self.target is not None and lbn != self.target:
            return False
        if self.kind == "blob":
            return True
        if hasattr(array, "copy_to_host"):  # a GPU register: its values are checked on a host copy
            array = array.copy_to_host()
        if self.kind == "nan":
            return array.dtype.kind == "f" and bool(np.isnan(array).any())
        if self.kind == "inf":
            return array.dtype.kind == "f" and bool(np.isinf(array).any())
        assert self.predicate is not None
        return bool(self.predicate(array))

    @property
    def text(self) -> str:
        """What it stops on, in words."""
        where = f"blob {self.target}" if self.target else "any produced blob"
        if self.kind == "nan":
            return f"after an act writes a NaN into {where}"
        if self.kind == "inf":
            return f"after an act writes an Inf into {where}"
        if self.kind == "predicate":
            name = getattr(self.predicate, "__name__", "predicate")
            return f"after an act writes {where} and {name}(values) is true"
        if self.kind == "blob":
            return f"after the act that writes blob {self.target}"
        return f"before {self.kind} {self.target} acts"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "target": self.target, "text": self.text,
                "enabled": self.enabled, "hits": self.hits}

    def __str__(self) -> str:
        extra = "" if self.enabled else " (disabled)"
        hits = f", hit {self.hits}x" if self.hits else ""
        return f"breakpoint {self.id} [{self.kind}]: {self.text}{hits}{extra}"


class BreakpointList(list[Breakpoint]):
    """``dbg.breakpoints``: the user's breakpoints (a copy; ``remove_breakpoint(id)`` removes one)."""

    def __str__(self) -> str:
        if not self:
            return "no breakpoints"
        return "\n".join(str(bp) for bp in self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))
