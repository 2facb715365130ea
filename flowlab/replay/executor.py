"""The replay executor: a runtime's calls replayed from their captured Schedules (layer.py), the rungs ``replay``,
``fused`` (its schedules' kernels in Numba segments) and ``lanes`` (one lane per Plan thread, on OS threads).

A call the layer cannot replay (not at a state a schedule starts from, or not captured yet) is stepped by the
protocol inside this executor, and captured when it starts idle: the executor is the same for every call of the
session, and ``ReplayLayer.runs`` counts which way each went.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..runtime.executor import NO_ENTRIES
from .layer import ReplayLayer

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ..runtime.executor import Call
    from ..runtime.policy import ExecutionPolicy


class ReplayExecutor:
    """Replay of captured Schedules over ``runtime`` (its ``layer``); ``fuse``/``lanes`` as the policy says (None:
    the flag; lanes when the runtime runs its Plan threads at once)."""

    entries = NO_ENTRIES

    def __init__(self, runtime: Runtime, fuse: bool | None = None, lanes: bool | None = None,
                 execution: ExecutionPolicy | None = None) -> None:
        self.runtime = runtime
        self.layer = ReplayLayer(runtime, fuse=fuse, lanes=lanes)
        self.layer.execution = execution  # lanes time themselves against one thread and record the verdict there
        runtime.executor = "protocol"  # the calls it steps (captures) are stepped on one thread (run_protocol)

    @property
    def name(self) -> str:  # lanes until their trial loses (lanes.drop_lanes): then fused on one thread
        return "lanes" if self.layer.lanes else "fused" if self.layer.fuse else "replay"

    def run(self, call: Call) -> None:
        threads = self.runtime.threads
        if threads is not None and threads.active:
            self.runtime._stepped()  # the layer reads and wraps the actors' own kernels
        self.layer.run_call(call.instances, call.key, call.guard)

    def close(self) -> None:
        self.runtime.close()  # settles first (Runtime.observe)

    def shutdown(self) -> None:
        pass  # nothing beyond the runtime

    def __str__(self) -> str:
        layer = self.layer
        lowering = {"lanes": "replay on lanes, one per Plan thread", "fused": "replay, fused into Numba segments",
                    "replay": "replay, kernel by kernel"}[self.name]
        return (f"{self.name}: {lowering}; {len(layer.schedules)} schedules, {layer.replays} calls replayed, "
                f"{layer.protocol_calls} stepped by the protocol")

    def __repr__(self) -> str:
        return f"<ReplayExecutor {self.name}: {self.layer!r}>"
