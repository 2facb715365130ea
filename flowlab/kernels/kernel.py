"""A kernel as a value (``Kernel``): the function an act calls, and what the kernel is. kernels/registry.py makes
them; the runtime, replay and the debugger read their fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .registry import FusedCall

KernelFn = Callable[[list[np.ndarray], list[np.ndarray]], None]


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: its fields are functions and arrays' owners
class Kernel:
    """One task's kernel as a value: ``fn(ins, outs)`` is what an act calls (the actor holds ``fn`` itself, so an
    act costs one plain call); the rest says what it is, for the consumers that ask (replay, events, the
    debugger) instead of probing attributes of the function. ``op``: the op type (or the system kernel's kind);
    ``tier``: "reference", "numba", "tiered" (its tier changes: ``tiered`` is its state) or "system";
    ``fused``: ``build(ins, outs) -> FusedCall | None``, the act as one Numba call for fused segments (None: it
    never fuses); ``stream``: the CUDA stream a GPU act enqueues on (its event synchronises it); ``notifies``:
    a callback-notify kernel, which a replay turns into a direct notify; ``info``: what the factory chose, for
    inspection (a Winograd conv's plan)."""

    fn: KernelFn
    op: str = ""
    tier: str = "numba"
    device: str = "cpu"
    fused: Callable[..., FusedCall | None] | None = None
    tiered: Any = None  # kernels.tiered.TieredKernel
    stream: Any = None
    notifies: bool = False
    info: Any = None

    def __call__(self, ins: Any, outs: Any, *stream: Any) -> None:
        """Run one act (tests, one-off calls; an act loop calls ``fn`` itself: a call through here costs more)."""
        self.fn(ins, outs, *stream)  # type: ignore[call-arg]  # a GPU factory's fn(ins, outs, stream)

    def wrap(self, fn: KernelFn, **changes: Any) -> Kernel:
        """The same kernel run through ``fn`` (a lock, a stream's ordering, a recorder): what it says is kept."""
        return dataclasses.replace(self, fn=fn, **changes)

    def __repr__(self) -> str:
        what = [self.tier, *(["fused"] if self.fused is not None else []), *([self.device] if self.device != "cpu"
                                                                               else [])]
        if self.tiered is not None:
            what[0] = repr(self.tiered)
        return f"Kernel({self.op or getattr(self.fn, '__name__', '?')}: {', '.join(what)})"
