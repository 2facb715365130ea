"""Runtime events: what one act did. Subscribers (debugger, recorder, progress) receive them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ActEvent:
    seq: int  # position in the run (0, 1, 2, ...)
    actor_id: int  # = task_id
    actor_name: str
    task_type: str
    job_id: int
    act_id: int  # this actor's act counter
    read: tuple[tuple[int, int], ...]  # (regst_desc_id, register index) consumed
    written: tuple[tuple[int, int], ...]  # (regst_desc_id, register index) produced
    # which kernel ran the act: "reference" or "numba" (a tiered kernel says which tier it was on); None for an
    # act with no op kernel (system actors, boxing, copies)
    tier: str | None = None
    # which executor performed the act (runtime/policy.py's ladder): "protocol" (stepping in this process) or
    # "ray" (stepping on Ray machine processes); the faster executors build no events (a subscriber makes a call
    # run on the protocol), so an event always names the loop that acted
    executor: str = "protocol"

    def __str__(self) -> str:
        read = ",".join(f"r{r}" for r, _ in self.read)
        written = ",".join(f"r{r}" for r, _ in self.written)
        tier = f" [{self.tier}]" if self.tier else ""
        return f"#{self.seq} {self.actor_name} act {self.act_id}{tier} read[{read}] wrote[{written}]"


@dataclass(frozen=True, slots=True)
class JobFinishedEvent:
    job_name: str
    instance_seq: int


class RuntimeIdle(RuntimeError):
    """The scheduler has nothing left to do, but what it was asked to wait for has not happened."""
