"""The runtime on GPUs: device arenas, one CUDA stream per GPU thread, and the kernels of GPU tasks.

A memory block whose ``mem_case`` is ``device_cuda:<dev>`` is one device array (zeroed, as OneFlow's allocator
does); ``host_pinned:<dev>`` one pinned host array; registers are views into them as on the host. A GPU task
runs on its thread's stream: an op's (op type, "gpu") kernel is enqueued there, a CopyHd copies on its H2D or
D2H stream. Ordering uses events, as OneFlow's stream callbacks do: every GPU act records an event on its stream
and leaves it on the registers it read and wrote (``Regst.event``).

* An act on another stream first makes its stream wait for the events of the registers it is about to read or
  overwrite (cudaStreamWaitEvent: the host does not block).
* A copy (CopyHd H2D or D2H, an interface op's copy into the device) only enqueues: its act ends with the copy in
  flight, so it overlaps the next host act as well as GPU compute. The host side waits where it needs the memory:
  a host act whose registers meet a GPU task (``host_after_gpu``) first waits for the events of the registers it
  is about to read (a D2H copy's pinned output) or overwrite (a pinned register an H2D copy is still reading).
  OneFlow gets the same order by sending an act's register messages from a callback on its stream; flowlab sends
  them at once and lets the reader wait, which is the same for the data and blocks the host no earlier.
* Acts that hand host memory to a kernel or run a host kernel on device data (an op reading a pinned register
  directly, a system op bridged through host copies) still wait for their stream before the act ends.
* A stepped act that someone records or hooks (the debugger, breakpoints) waits for its stream too
  (Runtime._act), so what is inspected between acts is finished memory.

In Numba's simulator events and streams are synchronous no-ops; they are recorded and waited all the same, and
tests/cuda/test_gpu_streams.py defers the copies to check the order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir import MemBlock, TaskProto
from ..kernels.registry import Kernel
from .system_kernels import DISTRIBUTE_OPS

if TYPE_CHECKING:
    from .actor import Actor
    from .runtime import Runtime

KernelFn = Callable[[list[Any], list[Any]], None]
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


def gpu_kernel(rt: Runtime, actor: Actor, kernel: KernelFn | None, touches_host: bool, what: Kernel) -> Kernel:
    """``kernel`` (which enqueues its work on the actor's stream) with the cross-stream ordering above, as ``what``
    says it is (on the GPU, with the stream, never fused)."""
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
        if touches_host:  # a kernel given host memory, or a host kernel on copies of device data (see above)
            stream.synchronize()

    return what.wrap(act, device="gpu", stream=stream, fused=None)


def enqueue_copy(dst: Any, src: Any, stream: Any) -> None:
    """``dst <- src`` on ``stream``, asynchronously where the host side is pinned: the copy of a CopyHd or an
    interface op. The host side is waited for by the host act that next reads or rewrites it (host_after_gpu)."""
    if on_device(dst):
        dst.copy_to_device(src, stream=stream)
    else:
        src.copy_to_host(dst, stream=stream)


def copy_hd_kernel(rt: Runtime, actor: Actor) -> Kernel:
    stream = rt.gpu_streams.of(actor.task)

    def copy(ins: list[Any], outs: list[Any]) -> None:
        for x, y in zip(ins, outs):
            enqueue_copy(y, x, stream)

    return gpu_kernel(rt, actor, copy, False, Kernel(copy, "copy_hd", "system"))


def host_after_gpu(actor: Actor, kernel: Kernel) -> Kernel:
    """A host act's ``kernel`` that first waits for the GPU work still pending on the registers it is about to read
    or overwrite (the event a GPU act left on them). For a host task whose registers meet a GPU task."""

    fn = kernel.fn

    def act(ins: list[Any], outs: list[Any]) -> None:
        for q in actor.readable_list:
            if q[0].event is not None:
                q[0].event[1].synchronize()
        for q in actor.writable_list:
            if q and q[0].event is not None:
                q[0].event[1].synchronize()
        fn(ins, outs)

    return kernel.wrap(act, fused=None)  # a fused segment would skip the waits


def device_kernel(rt: Runtime, actor: Actor, kernel: Kernel, touches_host: bool) -> Kernel:
    """An op's CUDA kernel ``fn(ins, outs, stream)`` bound to the actor's stream. ``touches_host``: it reads or
    writes a host register (an input an interface op left in pinned memory)."""
    stream, factory_kernel = rt.gpu_streams.of(actor.task), kernel.fn

    def launch(ins: list[Any], outs: list[Any]) -> None:
        factory_kernel(ins, outs, stream)  # type: ignore[call-arg]  # a GPU factory's fn(ins, outs, stream)

    return gpu_kernel(rt, actor, launch, touches_host, kernel)


def system_on_gpu(rt: Runtime, actor: Actor, kernel: Kernel | None) -> Kernel:
    """A system op placed on a GPU (an interface op, model I/O on a GPU variable): output/return copy on the
    device; the rest runs its host kernel over host copies of the device arrays, writing back what it writes."""
    op = actor.task.exec_sequence[0]
    stream = rt.gpu_streams.of(actor.task)
    what = Kernel(lambda ins, outs: None, op.op_type, "system")
    if kernel is None:
        return gpu_kernel(rt, actor, None, False, what)
    if op.op_type in ("output", "return") or op.op_type in DISTRIBUTE_OPS:  # a distribute op copies its piece

        def copy(ins: list[Any], outs: list[Any]) -> None:
            enqueue_copy(outs[0], ins[0], stream)

        return gpu_kernel(rt, actor, copy, False, what)
    writes_ins, host = op.op_type in IN_PLACE_SYSTEM_OPS, kernel.fn

    def bridged(ins: list[Any], outs: list[Any]) -> None:
        host_ins = [a.copy_to_host(stream=stream) if on_device(a) else a for a in ins]
        host_outs = [np.empty(a.shape, a.dtype) if on_device(a) else a for a in outs]
        stream.synchronize()
        host(host_ins, host_outs)
        for a, h in zip(outs, host_outs):
            if on_device(a):
                a.copy_to_device(h, stream=stream)
        if writes_ins:
            for a, h in zip(ins, host_ins):
                if on_device(a):
                    a.copy_to_device(h, stream=stream)

    return gpu_kernel(rt, actor, bridged, True, kernel)
