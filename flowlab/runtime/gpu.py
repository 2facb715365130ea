"""The runtime on GPUs: device arenas, one CUDA stream per GPU thread, and the kernels of GPU tasks.

A memory block whose ``mem_case`` is ``device_cuda:<dev>`` is one device array (zeroed, as OneFlow's allocator
does); ``host_pinned:<dev>`` one pinned host array; registers are views into them as on the host. A GPU task
runs on its thread's stream: an op's (op type, "gpu") kernel is enqueued there, a CopyHd copies on its H2D or
D2H stream. Ordering between streams uses events, as OneFlow's stream callbacks do: every GPU act records an
event on its stream and leaves it on the registers it read and wrote; an act on another stream first makes its
stream wait for the events of the registers it is about to read or overwrite. A GPU act that reads or writes
host memory (a D2H copy, an H2D copy, an interface op reading a pinned register) waits for its stream before the
act ends, so the host side (the next act, or the producer refilling the register) sees finished memory. In
Numba's simulator events and streams are synchronous no-ops; they are recorded and waited all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir import MemBlock, TaskProto

if TYPE_CHECKING:
    from .actor import Actor
    from .runtime import Runtime

Kernel = Callable[[list[Any], list[Any]], None]
IN_PLACE_SYSTEM_OPS = frozenset({"model_init", "model_load"})  # they write their input (the variable)


def _cuda() -> Any:
    from ..kernels.numba_cuda._cuda import cuda

    return cuda


def on_device(array: Any) -> bool:
    """A device array (numba's DeviceNDArray, or the simulator's stand-in), not host memory."""
    return hasattr(array, "copy_to_host")


def allocate_block(block: MemBlock) -> Any:
    """One zeroed arena for a device or pinned block (host blocks stay with regst.allocate_arenas)."""
    cuda = _cuda()
    if block.mem_case.startswith("device_cuda:"):
        with cuda.gpus[int(block.mem_case.partition(":")[2])]:
            return cuda.to_device(np.zeros(block.mem_size, np.uint8))
    arena = cuda.pinned_array(block.mem_size, np.uint8)
    arena[...] = 0
    return arena


class GpuStreams:
    """One CUDA stream per GPU thread of the Plan (OneFlow's GpuThread owns one CudaStreamHandle)."""

    def __init__(self) -> None:
        self.streams: dict[int, Any] = {}
        self.events_recorded = 0  # for tests: the simulator's events do nothing, so count them

    def of(self, task: TaskProto) -> Any:
        key = (task.machine_id << 32) | task.thrd_id
        if key not in self.streams:
            cuda = _cuda()
            with cuda.gpus[task.gpu_device or 0]:  # a stream belongs to its GPU (GpuThread's cudaSetDevice)
                self.streams[key] = cuda.stream()
        return self.streams[key]

    def record(self, stream: Any, event: Any = None) -> Any:
        """Record ``event`` (a new one when None) on ``stream``. An actor re-records its one event every act:
        waiting for a later record of it is waiting for more of the same stream's work, never less."""
        event = _new_event() if event is None else event
        event.record(stream)
        self.events_recorded += 1
        return event


def _new_event() -> Any:
    """An event for ordering only (no timing: cheaper to record); the simulator's Event takes no arguments."""
    cuda = _cuda()
    try:
        return cuda.event(timing=False)
    except TypeError:
        return cuda.event()


def gpu_kernel(rt: Runtime, actor: Actor, kernel: Kernel | None, touches_host: bool) -> Kernel:
    """``kernel`` (which enqueues its work on the actor's stream) with the cross-stream ordering above."""
    streams: GpuStreams = rt.gpu_streams
    stream = streams.of(actor.task)
    device = actor.task.gpu_device or 0
    own: list[Any] = [None]  # the actor's one event, made at its first act (cuEventCreate once, not per act)

    def act(ins: list[Any], outs: list[Any]) -> None:
        if device:  # GPU 0 is numba's current device already; another one is made current for the act
            with _cuda().gpus[device]:
                on_stream(ins, outs)
        else:
            on_stream(ins, outs)

    def on_stream(ins: list[Any], outs: list[Any]) -> None:
        regsts = [q[0] for q in actor.readable_list] + [q[0] for q in actor.writable_list if q]
        for regst in regsts:
            pending = regst.event
            if pending is not None and pending[0] is not stream:
                pending[1].wait(stream)
        if kernel is not None:
            kernel(ins, outs)
        event = (stream, streams.record(stream, own[0]))
        own[0] = event[1]
        for regst in regsts:
            regst.event = event
        if touches_host:
            stream.synchronize()

    act.stream = stream  # type: ignore[attr-defined]
    return act


def copy_hd_kernel(rt: Runtime, actor: Actor) -> Kernel:
    stream = rt.gpu_streams.of(actor.task)
    if actor.task.exec_sequence[0].attrs["type"] == "H2D":

        def h2d(ins: list[Any], outs: list[Any]) -> None:
            for x, y in zip(ins, outs):
                y.copy_to_device(x, stream=stream)

        return gpu_kernel(rt, actor, h2d, touches_host=True)

    def d2h(ins: list[Any], outs: list[Any]) -> None:
        for x, y in zip(ins, outs):
            x.copy_to_host(y, stream=stream)

    return gpu_kernel(rt, actor, d2h, touches_host=True)


def device_kernel(rt: Runtime, actor: Actor, factory_kernel: Any, touches_host: bool) -> Kernel:
    """An op's CUDA kernel ``fn(ins, outs, stream)`` bound to the actor's stream. ``touches_host``: it reads or
    writes a host register (an input an interface op left in pinned memory)."""
    stream = rt.gpu_streams.of(actor.task)

    def launch(ins: list[Any], outs: list[Any]) -> None:
        factory_kernel(ins, outs, stream)

    return gpu_kernel(rt, actor, launch, touches_host)


def system_on_gpu(rt: Runtime, actor: Actor, kernel: Kernel | None) -> Kernel:
    """A system op placed on a GPU (an interface op, model I/O on a GPU variable): output/return copy on the
    device; the rest runs its host kernel over host copies of the device arrays, writing back what it writes."""
    op = actor.task.exec_sequence[0]
    stream = rt.gpu_streams.of(actor.task)
    if kernel is None:
        return gpu_kernel(rt, actor, None, touches_host=False)
    if op.op_type in ("output", "return"):

        def copy(ins: list[Any], outs: list[Any]) -> None:
            outs[0].copy_to_device(ins[0], stream=stream)

        return gpu_kernel(rt, actor, copy, touches_host=not on_device(actor.in_arrays[0]) if actor.in_arrays
                          else True)
    writes_ins = op.op_type in IN_PLACE_SYSTEM_OPS

    def bridged(ins: list[Any], outs: list[Any]) -> None:
        host_ins = [a.copy_to_host(stream=stream) if on_device(a) else a for a in ins]
        host_outs = [np.empty(a.shape, a.dtype) if on_device(a) else a for a in outs]
        stream.synchronize()
        kernel(host_ins, host_outs)  # type: ignore[misc]
        for a, h in zip(outs, host_outs):
            if on_device(a):
                a.copy_to_device(h, stream=stream)
        if writes_ins:
            for a, h in zip(ins, host_ins):
                if on_device(a):
                    a.copy_to_device(h, stream=stream)

    return gpu_kernel(rt, actor, bridged, touches_host=True)
