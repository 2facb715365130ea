"""The order of GPU copies against host acts, with copies that really are asynchronous.

Numba's simulator runs every copy at once, so a missing wait cannot show there. Here each copy on a copy stream
(runtime/gpu.py's ``enqueue_copy`` in a CopyHd H2D or D2H act) is deferred on its stream until something waits
for it: an event recorded after it is waited for by another stream or synchronized by the host,
or its stream is synchronized. A host act that read a D2H copy's output without waiting would see the previous
call's values (or zeros); a host producer that rewrote a pinned register an H2D copy had not read yet would send
the GPU the next call's input; both give wrong numbers, which the tests compare with NumPy's and the CPU's.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.kernels import Kernel
from flowlab.kernels.numba_cuda import launch_config
from flowlab.runtime import gpu
from tests.helpers.gpu_jobs import XS, YS, mlp_job, pad_job


class DeferredCopies:
    """Per stream: the copies enqueued and not run yet, and how many ran. An event marks how many copies its
    stream had enqueued when it was recorded; waiting for it runs those."""

    def __init__(self) -> None:
        self.pending: dict[int, list[Callable[[], None]]] = defaultdict(list)
        self.enqueued: dict[int, int] = defaultdict(int)
        self.ran: dict[int, int] = defaultdict(int)
        self.deferred = 0  # copies that were still pending when their act ended (the point of the test)

    def enqueue(self, run: Callable[[], None], stream: Any) -> None:
        self.pending[id(stream)].append(run)
        self.enqueued[id(stream)] += 1
        self.deferred += 1

    def flush(self, stream: Any, upto: int | None = None) -> None:
        key = id(stream)
        upto = self.enqueued[key] if upto is None else upto
        while self.ran[key] < upto:
            self.pending[key].pop(0)()
            self.ran[key] += 1


class Marker:
    """A recorded event that also remembers its stream's copy count."""

    def __init__(self, copies: DeferredCopies, event: Any, stream: Any) -> None:
        self.copies, self.event, self.stream = copies, event, stream
        self.upto = copies.enqueued[id(stream)]

    def _flush(self) -> None:
        """Run the copies recorded before this event; on a GPU they are enqueued only now, after the event's
        record, so record it again behind them (a later record covers more of its stream's work, never less)."""
        if self.copies.ran[id(self.stream)] < self.upto:
            self.copies.flush(self.stream, self.upto)
            self.event.record(self.stream)

    def wait(self, stream: Any) -> None:
        self._flush()
        self.event.wait(stream)

    def synchronize(self) -> None:
        self._flush()
        self.event.synchronize()


@pytest.fixture
def deferred(monkeypatch) -> DeferredCopies:
    copies = DeferredCopies()
    real_copy, real_record = gpu.enqueue_copy, gpu.GpuStreams.record

    def enqueue_copy(dst: Any, src: Any, stream: Any) -> None:
        if getattr(stream, "copies_only", False):
            copies.enqueue(lambda: real_copy(dst, src, stream), stream)
        else:  # a copy on a compute stream (an interface op's): kernels there run at once, so must it (in order)
            real_copy(dst, src, stream)

    real_of = gpu.GpuStreams.of

    def of(self: gpu.GpuStreams, task: Any) -> Any:
        stream = real_of(self, task)
        stream.copies_only = task.task_type == "CopyHd"  # the H2D and D2H streams run copies alone
        return stream

    def record(self: gpu.GpuStreams, stream: Any, event: Any = None) -> Marker:
        return Marker(copies, real_record(self, stream, event.event if event is not None else None), stream)

    stream_type = type(gpu._cuda().stream())
    real_sync = stream_type.synchronize

    def synchronize(stream: Any) -> None:
        copies.flush(stream)
        real_sync(stream)

    monkeypatch.setattr(gpu, "enqueue_copy", enqueue_copy)
    monkeypatch.setattr(gpu.GpuStreams, "of", of)
    monkeypatch.setattr(gpu.GpuStreams, "record", record)
    monkeypatch.setattr(stream_type, "synchronize", synchronize)
    with launch_config(threads=8, tile=4, tile_k=2, micro=2, max_blocks=4):
        yield copies


def test_deferred_copies_give_the_same_pads_call_after_call(deferred):
    """H2D in, pad on the GPU, D2H out to the CPU Return: each call's output is its own input padded, though every
    copy is still in flight when its act ends."""
    job = pad_job()
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.standard_normal((2, 1, 3, 3)).astype(np.float32)
        np.testing.assert_array_equal(job(x), np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    assert deferred.deferred >= 6  # an H2D and a D2H per call at least, none run by its own act


def test_deferred_copies_train_an_mlp_to_the_cpu_numbers(deferred):
    """Inputs, labels and the learning rate cross by H2D copies, the loss comes back by a D2H copy: three SGD
    steps with momentum give the CPU's losses and variables."""
    got: dict[str, list[np.ndarray]] = {}
    variables = {}
    for device in ("cpu", "gpu"):
        flow.clear_default_session()
        job = mlp_job(device)
        got[device] = [job(x, y).copy() for x, y in zip(XS, YS)]
        variables[device] = flow.get_all_variables()
    for g, w in zip(got["gpu"], got["cpu"]):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    for name, value in variables["cpu"].items():
        np.testing.assert_allclose(variables["gpu"][name], value, rtol=1e-5, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("side", ["reads", "overwrites"])
def test_a_host_act_waits_for_the_gpu_work_pending_on_a_register_it_reads_or_overwrites(side):
    """A pinned register a D2H copy is still writing (the host reads it), or one an H2D copy is still reading
    (the host producer overwrites it): the host act synchronizes the event left on it before its kernel runs.
    (Within one call the second case is also covered by the GPU reader's wait; several calls in flight rely on
    this one.)"""
    order: list[str] = []

    class Event:
        def synchronize(self) -> None:
            order.append("wait")

    pending, idle = SimpleNamespace(event=(None, Event())), SimpleNamespace(event=None)
    reads, writes = (pending, idle) if side == "reads" else (idle, pending)
    actor = SimpleNamespace(readable_list=[deque([reads])], writable_list=[deque([writes]), deque()])
    gpu.host_after_gpu(actor, Kernel(lambda ins, outs: order.append("kernel"))).fn([], [])
    assert order == ["wait", "kernel"]


def test_the_debugger_reads_a_d2h_copys_pinned_output_right_after_stepping_it(deferred):
    """Between stepped acts nothing waits for the copy but the debugger, which looks at memory: a stepped GPU act
    finishes its stream's work (Runtime._act), so the pinned register holds the padded values, not zeros."""
    job = pad_job()
    x = np.arange(18, dtype=np.float32).reshape((2, 1, 3, 3)) + 1
    dbg = flow.debug(job, x)
    plan = dbg.runtime.plan
    (d2h,) = [t for t in plan.tasks if t.task_type == "CopyHd" and t.exec_sequence[0].attrs["type"] == "D2H"
              and plan.job_names[t.job_id] == "pad_Job"]
    dbg.run_to(f"pad_Job/{d2h.exec_sequence[0].name}")
    dbg.step()
    out = d2h.produced_regst_desc["copy_out"]
    (lbn,) = out.lbi2blob_desc
    assert out.mem_case.startswith("host_pinned")
    np.testing.assert_array_equal(dbg.runtime.regsts[out.regst_desc_id][0].blobs[lbn],
                                  np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    dbg.continue_()
    assert dbg.finished


def test_a_tiny_convnet_on_the_gpu_trains_to_the_cpu_numbers_with_deferred_copies(deferred):
    """conv2d (the implicit GEMM), max pooling, dense and their gradients on device registers viewed as 4-D blobs,
    two SGD steps with momentum: the CPU's losses and variables."""
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((2, 1, 4, 4)).astype(np.float32) for _ in range(2)]
    ys = [rng.integers(0, 3, 2).astype(np.int32) for _ in range(2)]

    def job(device: str):
        @flow.global_function(type="train")
        def conv_job(x: tp.Numpy.Placeholder((2, 1, 4, 4)), y: tp.Numpy.Placeholder((2,), dtype=flow.int32)) \
                -> tp.Numpy:
            with flow.scope.placement(device, "0:0"):
                init = flow.random_normal_initializer(stddev=0.5)
                conv = flow.layers.conv2d(x, 2, 3, padding="SAME", activation=flow.nn.relu, name="conv",
                                          kernel_initializer=init)
                pool = flow.nn.max_pool2d(conv, ksize=2, strides=2, padding="SAME", name="pool", data_format="NCHW")
                logits = flow.layers.dense(flow.reshape(pool, [2, -1]), 3, kernel_initializer=init, name="out")
                loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits, name="loss")
                flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
            return loss

        return conv_job

    got, variables = {}, {}
    for device in ("cpu", "gpu"):
        flow.clear_default_session()
        train = job(device)
        got[device] = [train(x, y).copy() for x, y in zip(xs, ys)]
        variables[device] = flow.get_all_variables()
    for g, w in zip(got["gpu"], got["cpu"]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert sorted(variables["gpu"]) == sorted(variables["cpu"])
    for name, value in variables["cpu"].items():
        np.testing.assert_allclose(variables["gpu"][name], value, rtol=1e-5, atol=1e-6, err_msg=name)
