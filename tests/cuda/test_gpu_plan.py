"""GPU-placed jobs through the whole stack (Numba's CUDA simulator unless NUMBA_ENABLE_CUDASIM=0): the Plan's
CopyHd tasks, GPU threads and mem cases, the runtime on device memory against the CPU's numbers, errors from a
GPU kernel, and the debugger on a GPU plan. Tiny shapes and launch configurations: the simulator runs each CUDA
thread as a Python thread."""

from __future__ import annotations

import re

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import KernelError
from flowlab.kernels.numba_cuda import launch_config
from tests.helpers.gpu_jobs import XS, YS, C, D, mlp_job, pad_job

X = np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32)


@pytest.fixture(autouse=True)
def tiny_launches():
    with launch_config(threads=8, tile=4, tile_k=2, micro=2, max_blocks=4):
        yield


def test_gpu_seed_job_gives_numpy_pad_and_its_plan_copies_host_to_device_and_back():
    job = pad_job()
    for x in (X, X * -2.5):
        np.testing.assert_array_equal(job(x), np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    plan = flow.default_session().plan
    user = [str(t) for t in plan.tasks if plan.job_names[t.job_id] == "pad_Job"]
    # G = 1: GPU 0 compute thread 0, H2D 1, D2H 2; CPU threads from 6 (6G), the TickTock thread 6G + C + 1 = 8;
    # a copy's register is doubled (read on another stream: FixRegisterNumRange)
    assert [re.sub(r"@blk\d+\+\d+ ", "", line) for line in user] == [
        "task 0:6:0 NormalForward Input_0 | consumes in_ctrl=[r16] | produces "
        "out=r0(Input_0/out:f32[2,1,3,3]) x1 host_pinned:0 out_ctrl=r4:ctrl x1",
        "task 0:0:0 NormalForward reflection_pad2d_0 | consumes in=[r22] | produces "
        "out=r1(reflection_pad2d_0/y_0:f32[2,1,5,5]) x1 device_cuda:0",
        "task 0:6:1 NormalForward Return_0 | consumes in=[r23] in_ctrl=[r4] | produces "
        "out=r2(Return_0/out:f32[2,1,5,5]) x1 out_ctrl=r3:ctrl x1",
        "task 0:8:0 Tick System-AutoTick-SinkTick | consumes in_ctrl=[r3] | produces out_ctrl=r17:ctrl x1",
        "task 0:1:0 CopyHd copy_hd_0 (H2D) | consumes copy_in=[r0] | produces "
        "copy_out=r22(Input_0/out:f32[2,1,3,3]) x2 device_cuda:0",
        "task 0:2:0 CopyHd copy_hd_1 (D2H) | consumes copy_in=[r1] | produces "
        "copy_out=r23(reflection_pad2d_0/y_0:f32[2,1,5,5]) x2 host_pinned:0",
    ]
    cases = {b.mem_block_id: b.mem_case for b in plan.mem_blocks}
    for desc in plan.regst_descs.values():  # a block's registers share its memory
        if desc.mem_block_id >= 0:
            assert desc.mem_case == cases[desc.mem_block_id], desc
    assert {"host", "host_pinned:0", "device_cuda:0"} <= set(cases.values())
    assert flow.default_session().runtime.layer is None  # replay declines a GPU plan: the protocol runs it
    streams = flow.default_session().runtime.gpu_streams
    assert sorted(streams.streams) == [0, 1, 2] and streams.events_recorded > 0  # one stream per GPU thread


def test_a_gpu_input_op_reads_the_push_jobs_pinned_host_register_without_a_copy():
    """With a GPU default placement the Input op is on the GPU: the push job's ForeignInput (CPU) feeds it straight
    (TryAddCopyH2DTaskTo's interface exemption; the register is pinned), and the CPU Return reads a D2H copy."""
    config = flow.FunctionConfig()
    config.default_placement_scope(flow.scope.placement("gpu", "0:0"))

    @flow.global_function(function_config=config)
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.math.relu(x)

    for sign in (1, -1):
        x = sign * np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
        np.testing.assert_array_equal(job(x), np.maximum(x, 0))
    plan = flow.default_session().plan
    (push_input,) = [t for t in plan.tasks if plan.job_names[t.job_id] == "System-Push-Input_0"
                     and t.name == "Input_0"]
    assert push_input.gpu_device == 0 and push_input.produced_regst_desc["out"].mem_case == "device_cuda:0"
    (fed_by,) = push_input.consumed_regst_desc_id["in"]
    assert plan.task(plan.regst_descs[fed_by].producer_task_id).task_type == "ForeignInput"
    assert plan.regst_descs[fed_by].mem_case == "host_pinned:0"
    copies = [(plan.job_names[t.job_id], t.exec_sequence[0].attrs["type"]) for t in plan.tasks
              if t.task_type == "CopyHd"]
    assert copies == [("job", "D2H")]  # into the CPU Return op only


def test_gpu_mlp_trains_to_the_cpu_numbers_with_train_step_and_learning_rate_on_the_cpu():
    cpu_job = mlp_job("cpu")
    want = [cpu_job(x, y).copy() for x, y in zip(XS, YS)]
    want_vars = flow.get_all_variables()
    flow.clear_default_session()
    job = mlp_job("gpu")
    got = [job(x, y).copy() for x, y in zip(XS, YS)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    got_vars = flow.get_all_variables()
    assert sorted(got_vars) == sorted(want_vars)
    for name, value in want_vars.items():
        np.testing.assert_allclose(got_vars[name], value, rtol=1e-5, atol=1e-7, err_msg=name)
    plan = flow.default_session().plan
    by_name = {t.name: t for t in plan.tasks if plan.job_names[t.job_id] == "train_job"}
    assert by_name["hidden-weight_optimizer"].gpu_device == 0 and by_name["hidden-weight_optimizer"].thrd_id == 0
    for name in ("System-Train-TrainStep-train_job", "System-Train-PrimaryLearningRate-Scheduler"):
        assert by_name[name].gpu_device is None and by_name[name].thrd_id >= 6, name  # on the CPU, as OneFlow
    lr = by_name["System-Train-PrimaryLearningRate-Scheduler"].produced_regst_desc["out"]
    (copy,) = [plan.task(c) for c in lr.consumer_task_ids]
    assert copy.task_type == "CopyHd" and copy.exec_sequence[0].attrs["type"] == "H2D" and copy.thrd_id == 1
    assert lr.mem_case == "host_pinned:0"
    assert by_name["hidden-weight"].produced_regst_desc["out"].mem_case == "device_cuda:0"


def test_a_gpu_plan_acts_on_one_host_thread_even_when_threads_are_forced(monkeypatch):
    """The simulator swaps a kernel's `cuda` global while it runs and a CUDA context belongs to its thread: a GPU
    plan's compute and CPU threads must not act on OS threads of their own (CI saw a copy on another thread find the
    simulator's fake module)."""
    from flowlab.runtime.threads import compute_threads, wants_parallel

    monkeypatch.setenv("FLOWLAB_THREADS", "1")
    job = mlp_job("gpu")
    job(XS[0], YS[0])
    plan = flow.default_session().plan
    assert len(compute_threads(plan)) >= 2  # the GPU's compute thread and the CPU's train-step thread
    assert not wants_parallel(plan)
    assert flow.default_session().runtime.threads is None
    job(XS[1], YS[1])  # and it runs


def test_a_bad_label_on_the_gpu_raises_as_on_the_cpu_and_the_session_trains_on():
    job = mlp_job("gpu")
    job(XS[0], YS[0])
    before = flow.get_all_variables()
    bad = YS[1].copy()
    bad[2] = C + 4
    with pytest.raises(KernelError, match=r"op 'loss' \(sparse_softmax_cross_entropy\) \(created at "
                                          r"gpu_jobs.py:\d+\) in job 'train_job' raised IndexError: label 7"):
        job(XS[1], bad)
    session = flow.default_session()
    assert session.status.value == "RUNNING" and session.cancelled_calls == 1
    after = flow.get_all_variables()
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)  # the failed call left no trace
    assert np.isfinite(job(XS[1], YS[1])).all()


def test_the_debugger_steps_a_gpu_plan_and_reads_a_device_register_through_the_host():
    job = pad_job()
    dbg = flow.debug(job, X)
    stop = dbg.run_to("pad_Job/reflection_pad2d_0")
    assert "reflection_pad2d_0" in str(stop)
    assert not dbg.blob("reflection_pad2d_0/y_0").written
    dbg.step()
    blob = dbg.blob("reflection_pad2d_0/y_0")
    assert blob.on_device and blob.written and "[GPU memory, copied to the host]" in str(blob)
    want = np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect")
    np.testing.assert_array_equal(np.asarray(blob), want)
    np.testing.assert_array_equal(dbg.value("reflection_pad2d_0/y_0"), want)
    assert blob.max == 17.0 and blob.min == 0.0
    dbg.inject("reflection_pad2d_0/y_0", np.zeros_like(want))  # into device memory; the D2H copy carries it
    dbg.continue_()
    assert dbg.finished
    np.testing.assert_array_equal(dbg.result, np.zeros_like(want))
    lanes = {e["args"]["name"] for e in dbg.trace_events()["traceEvents"] if e["ph"] == "M"}
    assert {"machine 0 GPU 0 compute stream (thread 0)", "machine 0 GPU 0 H2D stream (thread 1)",
            "machine 0 GPU 0 D2H stream (thread 2)"} <= lanes


def test_streams_are_ordered_by_events_where_a_register_crosses_streams(monkeypatch):
    """The simulator's streams are synchronous, so the ordering itself cannot go wrong here: check the mechanism.
    Each GPU act records an event on its stream; an act on another stream waits for the events of the registers
    it reads (H2D copy -> compute, compute -> D2H copy) before it enqueues anything, and the host Return act
    waits for the D2H copy's event (the copy's act ends with the copy in flight)."""
    from flowlab.runtime import gpu

    waits: list[tuple[int, int | str]] = []  # (thread that recorded, thread that waited or "host")
    real_record = gpu.GpuStreams.record

    class Spy:
        def __init__(self, event, stream) -> None:
            self.event, self.stream = event, stream

        def wait(self, stream) -> None:
            waits.append((self.stream.thrd, stream.thrd))
            self.event.wait(stream)

        def synchronize(self) -> None:
            waits.append((self.stream.thrd, "host"))
            self.event.synchronize()

    def record(self, stream, event=None):
        return Spy(real_record(self, stream, event.event if event is not None else None), stream)

    real_of = gpu.GpuStreams.of

    def of(self, task):
        stream = real_of(self, task)
        stream.thrd = task.thrd_id
        return stream

    monkeypatch.setattr(gpu.GpuStreams, "record", record)
    monkeypatch.setattr(gpu.GpuStreams, "of", of)
    job = pad_job()
    job(X)
    assert (1, 0) in waits and (0, 2) in waits  # H2D (thread 1) -> compute (0) -> D2H (2)
    assert (2, "host") in waits  # D2H -> the CPU's Return
    assert all(a != b for a, b in waits)  # a stream never waits for itself


def test_a_placement_on_a_gpu_this_machine_lacks_is_an_error_naming_it():
    from flowlab.errors import PlacementError
    from flowlab.frontend.scope import cuda_device_count

    n = cuda_device_count()
    flow.config.gpu_device_num(n + 1)
    with pytest.raises(PlacementError, match=rf"names gpu device {n}, but this machine has {n} CUDA device"):
        flow.scope.placement("gpu", f"0:0-{n}")


def test_gpu_variables_save_load_and_init_through_the_model_io_jobs(tmp_path):
    """Model I/O ops on GPU variables run their host kernels over copies of device memory and write back."""
    job = mlp_job("gpu")
    job(XS[0], YS[0])
    saved = flow.get_all_variables()
    flow.checkpoint.save(tmp_path / "ckpt")
    job(XS[1], YS[1])
    assert not np.array_equal(flow.get_all_variables()["hidden-weight"], saved["hidden-weight"])
    flow.checkpoint.load(tmp_path / "ckpt")
    for name, value in flow.get_all_variables().items():
        np.testing.assert_array_equal(value, saved[name], err_msg=name)
    flow.load_variables({"output-bias": np.full(C, 0.25, np.float32)})
    np.testing.assert_array_equal(flow.get_all_variables()["output-bias"], np.full(C, 0.25, np.float32))


def test_a_data_parallel_job_on_two_gpus_boxes_on_the_host_between_d2h_and_h2d_copies(monkeypatch):
    """Plan only (the simulator has one device): G = 2 gives compute threads 0-1, H2D 2-3, D2H 4-5 and CPU
    threads from 12; each GPU's copies run on its own streams, and the host boxing between them reads pinned
    registers of the GPU that made them."""
    from flowlab.compiler import check_plan, compile_jobs
    from flowlab.frontend import scope
    from flowlab.frontend.function import InterfaceCounter, trace

    monkeypatch.setattr(scope, "cuda_device_count", lambda: 2)
    flow.config.gpu_device_num(2)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((4, D)), y: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("gpu", "0:0-1"):
            logits = flow.layers.dense(x, C, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits, name="loss")
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(loss)
        return loss

    counter = InterfaceCounter()
    jobs = [trace(desc, counter)[0] for desc in flow.default_session().function_descs.values()]
    compiled = compile_jobs(jobs, 1, 2)
    check_plan(compiled.plan, compiled.job_set)
    plan = compiled.plan
    tasks = [t for t in plan.tasks if plan.job_names[t.job_id] == "train_job"]
    for t in tasks:
        if t.gpu_device is None:
            assert t.thrd_id >= 12, t
        elif t.task_type == "CopyHd":
            kind = t.exec_sequence[0].attrs["type"]
            assert t.thrd_id == (2 if kind == "H2D" else 4) + t.gpu_device, t
            mem = t.produced_regst_desc["copy_out"].mem_case
            assert mem == (f"device_cuda:{t.gpu_device}" if kind == "H2D" else f"host_pinned:{t.gpu_device}")
            out = t.produced_regst_desc["copy_out"]
            to_boxing = any(plan.task(c).task_type == "SliceBoxing" for c in out.consumer_task_ids)
            assert out.register_num == (1 if to_boxing else 2), t  # a copy read by boxing keeps one (gpu_plan.py)
        else:
            assert t.thrd_id == t.gpu_device and t.gpu_device == t.parallel_id, t
    boxing = [t for t in tasks if t.task_type == "SliceBoxing"]
    assert boxing and all(t.gpu_device is None for t in boxing)
    for t in boxing:  # a boxing node reads GPU results only through D2H copies
        for regst_id in t.consumed_ids:
            producer = plan.task(plan.regst_descs[regst_id].producer_task_id)
            assert producer.gpu_device is None or producer.task_type == "CopyHd", (t, producer)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the simulator computes in NumPy
def test_catch_nan_finds_the_gpu_op_that_made_an_inf_and_keeps_the_weights_on_the_device():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4, 2)), t: tp.Numpy.Placeholder((4, 1))) -> tp.Numpy:
        with flow.scope.placement("gpu", "0:0"):
            w = flow.get_variable("w", shape=(2, 1), initializer=flow.constant_initializer(0.5))
            diff = flow.math.subtract(flow.matmul(x, w, name="predict"), t, name="diff")
            loss = flow.math.reduce_mean(flow.math.square(diff, name="sq"), name="loss")
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.01]), momentum=0).minimize(loss)
        return loss

    rng = np.random.default_rng(1)
    batches = [(rng.normal(size=(4, 2)).astype(np.float32), rng.normal(size=(4, 1)).astype(np.float32))
               for _ in range(3)]
    batches[2][0][1, 1] = 1e30  # finite input; its square overflows to inf on the GPU
    before = []
    with flow.debug.catch_nan() as catcher:
        for x, t in batches:
            before.append(flow.get_all_variables()["w"])
            train(x, t)
    assert catcher.caught and catcher.step == 2 and (catcher.job, catcher.op) == ("train", "sq")
    assert catcher.stop.blob.on_device and catcher.stop.blob.inf_count == 1
    np.testing.assert_array_equal(flow.get_all_variables()["w"], before[2])  # the bad call was undone


def test_a_device_allocation_failure_names_the_job_and_blob(monkeypatch):
    from flowlab.errors import AllocationError
    from flowlab.runtime import gpu

    def out_of_memory(block):
        raise RuntimeError("CUDA_ERROR_OUT_OF_MEMORY")

    monkeypatch.setattr(gpu, "allocate_block", out_of_memory)
    job = pad_job()
    with pytest.raises(AllocationError, match=r"job 'pad_Job' needs \d+ bytes .* for blob '[\w/]+' .*memory block "
                                              r"\d+ .*allocating it in (device_cuda|host_pinned):0 memory failed: "
                                              r"CUDA_ERROR_OUT_OF_MEMORY"):
        job(X)


def test_a_predicate_breakpoint_on_a_gpu_blob_sees_its_values_as_a_host_array():
    dbg = flow.debug(pad_job(), X)
    seen = []

    def big(array):
        seen.append(type(array))
        return bool(array.max() > 10)

    dbg.break_on(predicate=big, blob="reflection_pad2d_0/y_0")
    stop = dbg.continue_()
    assert stop.reason == "breakpoint" and stop.lbn == "reflection_pad2d_0/y_0" and stop.blob.on_device
    assert seen == [np.ndarray]  # a host copy, whatever device arrays are here
