"""What a stepping command returns (``Stop``) and the error for stepping a finished run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import FlowlabError
from ..runtime import ActEvent
from .breakpoints import Breakpoint
from .inspect import BlobStats


class RunFinished(FlowlabError, RuntimeError):
    """The debugged run has finished: nothing is left to step."""


@dataclass(frozen=True)
class Stop:
    """Why continue_/run_to/step_n stopped: 'breakpoint', 'reached' (run_to's target), 'finished', 'interrupted',
    'steps', 'job finished' or 'stuck' (no actor can act and the call has not finished; ``stuck`` is then the
    wait-for graph's text, as ``dbg.why_stuck()`` gives it). For a blob breakpoint (NaN, Inf, predicate, blob),
    ``op``/``actor`` name the act that WROTE the blob, ``lbn``/``regst`` the blob and its register, ``blob`` its
    statistics at the stop."""

    reason: str
    event: ActEvent | None = None  # the last act performed
    breakpoint: Breakpoint | None = None
    next_actor: str | None = None
    steps: int = 0  # acts performed by this command
    actor: str | None = None  # "job/op" of the act that hit a blob breakpoint
    op: str | None = None
    lbn: str | None = None
    regst: int | None = None
    blob: BlobStats | None = None
    stuck: str | None = None

    def __str__(self) -> str:
        if self.reason == "reached":
            text = f"reached {self.next_actor} after {self.steps} acts"
        elif self.breakpoint is not None:
            text = f"stopped by {self.breakpoint}"
            if self.blob is not None:
                text += (f"\n  {self.actor} (act #{self.event.seq if self.event else '?'}) wrote {self.lbn} "
                         f"(r{self.regst}): {self.blob.nan_count} NaN, {self.blob.inf_count} Inf of "
                         f"{self.blob.size}")
        else:
            text = f"{self.reason} after {self.steps} acts"
            if self.event is not None:
                text += f"; last: {self.event}"
        if self.next_actor and self.reason != "reached":
            text += f"; next: {self.next_actor}"
        if self.stuck is not None:
            text += f"; no actor can act and the call has not finished\n{self.stuck}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """The widget's ``stop`` state."""
        return {"reason": self.reason, "text": str(self), "op": self.op, "actor": self.actor,
                "regst": f"r:{self.regst}" if self.regst is not None else None, "lbn": self.lbn,
                "node": f"t:{self.event.actor_id}" if self.blob is not None and self.event else None,
                "nan": self.blob.nan_count if self.blob else None, "inf": self.blob.inf_count if self.blob else None,
                "breakpoint": self.breakpoint.id if self.breakpoint and not self.breakpoint.temporary else None}
