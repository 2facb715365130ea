# ruff: noqa: E501  (the pinned Plan text has the printer's long lines)
"""The structure of a multi-device Plan: a task per device per op, boxing where SBPs disagree (and upstream of
every optimizer), interface blocks shared per parallel_id, OneFlow's thread ids, physical shapes; and the printed
Plan of a small 2-device job, pinned."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler import check_plan
from flowlab.errors import CompileError
from flowlab.ir import BlobDesc, balanced_split

X = np.arange(12, dtype=np.float32).reshape(4, 3) - 6

PINNED_PLAN = """\
plan: 24 tasks, 29 regsts, 15 mem blocks
job 0 relu_job (user):
  task 0:0:0 NormalForward Input_0 [0/2] {out: S(0)} | consumes in_ctrl=[r23] | produces out=r0(Input_0/out:f32[2,3]) x1 @blk0+0
  task 0:1:0 NormalForward Input_0 [1/2] {out: S(0)} | consumes in_ctrl=[r23] | produces out=r1(Input_0/out:f32[2,3]) x1 @blk1+0
  task 0:0:1 NormalForward relu_0 [0/2] {x_0: S(0), y_0: S(0)} | consumes in=[r0] | produces out=r2(relu_0/y_0:f32[2,3]) x1 @blk3+0 out_ctrl=r7:ctrl x1
  task 0:1:1 NormalForward relu_0 [1/2] {x_0: S(0), y_0: S(0)} | consumes in=[r1] | produces out=r3(relu_0/y_0:f32[2,3]) x1 @blk4+0
  task 0:0:2 NormalForward Return_0 | consumes in=[r5] in_ctrl=[r7] | produces out=r4(Return_0/out:f32[4,3]) x1 @blk2+0 out_ctrl=r6:ctrl x1
  task 0:3:0 Tick System-AutoTick-SinkTick | consumes in_ctrl=[r6] | produces out_ctrl=r24:ctrl x1
  task 0:0:5 SliceBoxing System-Boxing-BoxingCopy-0 | consumes in_0=[r2] in_1=[r3] | produces out=r5(relu_0/y_0:f32[4,3]) x2 @blk5+0
job 1 System-Push-Input_0 (push):
  task 0:4:0 ForeignInput System-Push-Input_0-ForeignInput | consumes in_ctrl=[r25] | produces out=r8(System-Push-Input_0-ForeignInput/out:f32[4,3]) x1 @blk6+0
  task 0:0:3 NormalForward Input_0 [0/2] {in: S(0), out: S(0)} | consumes in=[r11] | produces out=r9(Input_0/out:f32[2,3]) x1 @blk0+0 out_ctrl=r13:ctrl x1
  task 0:1:2 NormalForward Input_0 [1/2] {in: S(0), out: S(0)} | consumes in=[r12] | produces out=r10(Input_0/out:f32[2,3]) x1 @blk1+0 out_ctrl=r14:ctrl x1
  task 0:3:1 Tick System-AutoTick-SinkTick | consumes in_ctrl=[r13,r14] | produces out_ctrl=r26:ctrl x1
  task 0:1:3 SliceBoxing System-Boxing-BoxingCopy-1 | consumes in_0=[r8] | produces out=r11(System-Push-Input_0-ForeignInput/out:f32[2,3]) x2 @blk7+0
  task 0:0:6 SliceBoxing System-Boxing-BoxingCopy-2 | consumes in_0=[r8] | produces out=r12(System-Push-Input_0-ForeignInput/out:f32[2,3]) x2 @blk8+0
job 2 System-Pull-Return_0 (pull):
  task 0:0:4 NormalForward Return_0 | consumes in_ctrl=[r27] | produces out=r15(Return_0/out:f32[4,3]) x1 @blk2+0
  task 0:5:0 ForeignOutput System-Pull-Return_0-ForeignOutput | consumes in=[r15] | produces out_ctrl=r16:ctrl x1
  task 0:3:2 Tick System-AutoTick-SinkTick | consumes in_ctrl=[r16] | produces out_ctrl=r28:ctrl x1
job 3 System-Main (main):
  task 0:6:0 WaitAndSendIds System-Main-WaitAndSendIds_0 | produces out=r17(System-Main-WaitAndSendIds_0/out:i32[1]) x100 @blk9+0
  task 0:3:3 ReentrantLock System-Main-ReentrantLock_0 | consumes start=[r17] end=[r22] | produces out=r18(System-Main-ReentrantLock_0/out:i32[1]) x1 @blk10+0
  task 0:3:4 Case System-Main-Case_0 | consumes in=[r18] | produces out_0=r19(System-Main-Case_0/out_0:i32[1]) x1 @blk11+0 out_1=r20(System-Main-Case_0/out_1:i32[1]) x1 @blk12+0 out_2=r21(System-Main-Case_0/out_2:i32[1]) x1 @blk13+0
  task 0:3:5 Tick System-Main-Tick_CriticalSection_0 | consumes in=[r19] | produces out_ctrl=r23:ctrl x1
  task 0:3:6 Tick System-Main-Tick_CriticalSection_1 | consumes in=[r20] | produces out_ctrl=r25:ctrl x1
  task 0:3:7 Tick System-Main-Tick_CriticalSection_2 | consumes in=[r21] | produces out_ctrl=r27:ctrl x1
  task 0:3:8 Esac System-Main-Esac_0 | consumes in=[r24,r26,r28] | produces out=r22(System-Main-Esac_0/out:i32[1]) x1 @blk14+0
  task 0:7:0 CallbackNotify System-Main-CallbackNotify_0 | consumes in=[r22]
mem blocks:
  block 0: 64 B host jobs=[0,1] fixed
  block 1: 64 B host jobs=[0,1] fixed
  block 2: 64 B host jobs=[0,2] fixed
  block 3: 64 B host jobs=[0] fixed
  block 4: 64 B host jobs=[0] fixed
  block 5: 128 B host jobs=[0] fixed
  block 6: 64 B host jobs=[1] fixed
  block 7: 128 B host jobs=[1] fixed
  block 8: 128 B host jobs=[1] fixed
  block 9: 6400 B host jobs=[3] fixed
  block 10: 64 B host jobs=[3] fixed
  block 11: 64 B host jobs=[3] fixed
  block 12: 64 B host jobs=[3] fixed
  block 13: 64 B host jobs=[3] fixed
  block 14: 64 B host jobs=[3] fixed
critical sections:
  cs 0: job 0 total_job blocks=[0,1,2,3,4,5]
  cs 1: job 1 total_job blocks=[0,1,6,7,8]
  cs 2: job 2 total_job blocks=[2]"""


def relu_session():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def relu_job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            return flow.math.relu(x)

    np.testing.assert_array_equal(relu_job(X), np.maximum(X, 0))
    return flow.default_session()


def test_printed_plan_of_a_two_device_job_is_pinned():
    assert str(relu_session().plan) == PINNED_PLAN


def test_one_task_per_device_with_parallel_ctx_and_physical_shapes():
    plan = relu_session().plan
    relu = plan.tasks_of_op("relu_job", "relu_0")
    assert [(t.parallel_id, t.parallel_num, t.machine_id) for t in relu] == [(0, 2, 0), (1, 2, 0)]
    assert [str(t.sbp_signature) for t in relu] == ["{x_0: S(0), y_0: S(0)}"] * 2
    assert [t.produced_regst_desc["out"].lbi2blob_desc["relu_0/y_0"].shape for t in relu] == [(2, 3), (2, 3)]
    (ret,) = plan.tasks_of_op("relu_job", "Return_0")  # one device (0:0): the whole blob, gathered by boxing
    assert ret.parallel_num == 1 and ret.sbp_signature is None
    regsts = plan.regst_descs
    (gather_id,) = ret.consumed_regst_desc_id["in"]
    gather = plan.task(regsts[gather_id].producer_task_id)
    assert gather.is_boxing and gather.task_type == "SliceBoxing" and gather.name.startswith("System-Boxing-")
    assert gather.exec_sequence[0].attrs["in_slice"] == (((0, 2), (0, 3)), ((2, 4), (0, 3)))


def test_uneven_split_follows_the_balanced_splitter():
    flow.config.cpu_device_num(3)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((7, 2))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-2"):
            return flow.math.relu(x)

    x = np.arange(14, dtype=np.float32).reshape(7, 2) - 5
    np.testing.assert_array_equal(job(x), np.maximum(x, 0))
    tasks = flow.default_session().plan.tasks_of_op("job", "relu_0")
    shapes = [t.produced_regst_desc["out"].lbi2blob_desc["relu_0/y_0"].shape[0] for t in tasks]
    assert tuple(shapes) == balanced_split(7, 3) == (3, 2, 2)


def test_thread_ids_follow_oneflows_layout():
    """C=2 CPU devices: device threads 0-1 (compute tasks round-robin in creation order per job), CommNet 2, one
    TickTock thread 3 for every tick-like task, then one thread per independent task type."""
    plan = relu_session().plan
    compute = [t for t in plan.tasks if t.task_type == "NormalForward"]
    assert {t.thrd_id for t in compute} == {0, 1}
    user = [t for t in plan.tasks_of_job("relu_job") if t.task_type == "NormalForward"]
    assert [t.thrd_id for t in user] == [0, 1, 0, 1, 0]  # round-robin, not by device id
    assert {t.thrd_id for t in plan.tasks if t.task_type in ("Tick", "Case", "Esac", "ReentrantLock")} == {3}
    independent = {t.task_type: t.thrd_id for t in plan.tasks
                   if t.task_type in ("WaitAndSendIds", "ForeignInput", "ForeignOutput", "CallbackNotify")}
    assert sorted(independent.values()) == [4, 5, 6, 7]
    assert all(t.thrd_id in (0, 1) for t in plan.tasks if t.task_type == "SliceBoxing")


def test_interface_blocks_are_shared_per_parallel_id():
    plan = relu_session().plan
    user = plan.tasks_of_op("relu_job", "Input_0")
    push = plan.tasks_of_op("System-Push-Input_0", "Input_0")
    blocks = [t.produced_regst_desc["out"].mem_block_id for t in user]
    assert blocks == [t.produced_regst_desc["out"].mem_block_id for t in push]
    assert len(set(blocks)) == 2  # one block per device, each shared by the push job and the user job
    assert all(plan.mem_block(b).job_ids == (0, 1) for b in blocks)
    # the push job scatters the batch: one slice copy per device, from the one ForeignInput
    regsts = plan.regst_descs
    for p, task in enumerate(push):
        (rid,) = task.consumed_regst_desc_id["in"]
        copy = plan.task(regsts[rid].producer_task_id)
        assert copy.task_type == "SliceBoxing"
        assert copy.exec_sequence[0].attrs["out_slice"] == ((2 * p, 2 * p + 2), (0, 3))


def test_partial_sum_gradients_are_boxed_to_broadcast_before_each_optimizer():
    flow.config.cpu_device_num(2)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            h = flow.layers.dense(x, 3, kernel_initializer=flow.truncated_normal(0.1), name="fc")
            loss = flow.math.reduce_mean(h * h)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    train_job(np.ones((4, 6), np.float32))
    plan = flow.default_session().plan
    regsts = plan.regst_descs
    optimizers = [t for t in plan.tasks_of_job("train_job") if t.name.endswith("_optimizer")]
    assert len(optimizers) == 4  # weight and bias, on each of the two devices
    for task in optimizers:
        op = task.exec_sequence[0]
        (diff_lbn,) = op.inputs["model_diff"]
        producer = next(plan.task(regsts[r].producer_task_id) for r in task.consumed_regst_desc_id["in"]
                        if diff_lbn in regsts[r].lbi2blob_desc)
        # P -> B: reduce-scatter (BoxingAdd) then all-gather (BoxingCopy), as OneFlow's CPU slice boxing does
        assert producer.op_types == ("slice_boxing_copy",), task
        for rid in producer.consumed_ids:
            assert plan.task(regsts[rid].producer_task_id).op_types == ("slice_boxing_add",)


def _rewire(plan, task, slot, old_id, new_id):
    """The plan with ``task`` reading register ``new_id`` instead of ``old_id`` in ``slot``, consumer lists kept
    consistent, so only the multi-device rules can object."""
    tasks = []
    for t in plan.tasks:
        if t.task_id == task.task_id:
            ids = tuple(new_id if i == old_id else i for i in t.consumed_regst_desc_id[slot])
            t = dataclasses.replace(t, consumed_regst_desc_id={**t.consumed_regst_desc_id, slot: ids})
        produced = {}
        for name, r in t.produced_regst_desc.items():
            consumers = r.consumer_task_ids
            if r.regst_desc_id == old_id:
                consumers = tuple(c for c in consumers if c != task.task_id)
            if r.regst_desc_id == new_id:
                consumers = (*consumers, task.task_id)
            produced[name] = dataclasses.replace(r, consumer_task_ids=consumers)
        tasks.append(dataclasses.replace(t, produced_regst_desc=produced))
    return dataclasses.replace(plan, tasks=tuple(tasks))


def test_verifier_refuses_a_split_piece_read_directly_as_the_whole_blob():
    session = relu_session()
    plan = session.plan
    check_plan(plan, session.job_set)
    (ret,) = plan.tasks_of_op("relu_job", "Return_0")
    (gather_id,) = ret.consumed_regst_desc_id["in"]
    relu0 = plan.tasks_of_op("relu_job", "relu_0")[0].produced_regst_desc["out"].regst_desc_id
    with pytest.raises(CompileError, match=r"Return_0 reads blob 'relu_0/y_0' as None directly from relu_0 \[0/2\], "
                                           r"which holds it as S\(0\)"):
        check_plan(_rewire(plan, ret, "in", gather_id, relu0))


def test_verifier_refuses_a_register_crossing_machines_without_copy_comm_net():
    flow.config.cpu_device_num(2)
    flow.env.machine(["10.0.0.1", "10.0.0.2"])

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            a = flow.identity(x)
        with flow.scope.placement("cpu", "1:0"):  # one device to one device, on another machine
            return flow.math.relu(a)

    np.testing.assert_array_equal(job(X), np.maximum(X, 0))
    plan = flow.default_session().plan
    check_plan(plan)
    (relu,) = plan.tasks_of_op("job", "relu_0")
    (copy_id,) = relu.consumed_regst_desc_id["in"]
    regsts = plan.regst_descs
    copy = plan.task(regsts[copy_id].producer_task_id)
    assert copy.task_type == "CopyCommNet" and copy.machine_id == 1
    (remote,) = copy.consumed_ids
    with pytest.raises(CompileError, match="crosses machines only through a CopyCommNet task"):
        check_plan(_rewire(plan, relu, "in", copy_id, remote))


def test_verifier_checks_physical_shapes_against_the_balanced_splitter():
    session = relu_session()
    plan = session.plan
    relu1 = plan.tasks_of_op("relu_job", "relu_0")[1]
    out = relu1.produced_regst_desc["out"]
    wrong = dataclasses.replace(out, lbi2blob_desc={"relu_0/y_0": BlobDesc((3, 3), out.lbi2blob_desc["relu_0/y_0"].dtype)})
    tasks = tuple(dataclasses.replace(t, produced_regst_desc={**t.produced_regst_desc, "out": wrong})
                  if t.task_id == relu1.task_id else t for t in plan.tasks)
    with pytest.raises(CompileError, match=r"relu_0 \[1/2\] of job 'relu_job' holds 'relu_0/y_0' as f32\[3,3\]; "
                                           r"S\(0\) of the logical f32\[4,3\] on device 1 of 2 is f32\[2,3\]"):
        check_plan(dataclasses.replace(plan, tasks=tasks), session.job_set)
    with pytest.raises(CompileError, match=r"boxing task System-Boxing-BoxingCopy-0 reads f32\[3,3\] as input 1, but "
                                           r"its slice \[2:4,0:3\] holds 6 elements"):
        check_plan(dataclasses.replace(plan, tasks=tasks))  # without the jobs: the gather's slices catch it


def test_a_watch_on_several_devices_hands_the_whole_blob_over_once():
    flow.config.cpu_device_num(2)
    seen = []

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            y = flow.math.relu(x)
            flow.watch(y, seen.append)
            return y

    job(X)
    watches = [t for t in flow.default_session().plan.tasks if t.op_types == ("foreign_watch",)]
    assert [t.parallel_num for t in watches] == [2, 2]  # B on both devices: boxing gathered the blob for each
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], np.maximum(X, 0))


def test_a_mirrored_return_comes_back_per_device_as_list_numpy_and_whole_as_numpy():
    flow.config.cpu_device_num(2)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=config)
    def pieces(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        return flow.math.relu(x)

    @flow.global_function(function_config=config)
    def whole(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.math.square(x)

    got = pieces([X[:2], X[2:]])
    assert isinstance(got, list) and len(got) == 2
    np.testing.assert_array_equal(got[0], np.maximum(X[:2], 0))
    np.testing.assert_array_equal(got[1], np.maximum(X[2:], 0))
    np.testing.assert_array_equal(whole([X[:2], X[2:]]), X * X)


def two_machine_session():
    flow.config.cpu_device_num(2)
    flow.env.machine(["10.0.0.1", "10.0.0.2"])

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", ["0:0-1", "1:0-1"]):
            return flow.math.relu(x) * 2.0

    np.testing.assert_array_equal(job(X), np.maximum(X, 0) * 2)
    return flow.default_session()


def test_a_multi_machine_plan_is_steppable_and_deterministic():
    """Stepped one act at a time, twice, the same acts in the same order, and the run's result."""
    from flowlab.runtime import JobInstance, Runtime

    plan = two_machine_session().plan
    assert {t.machine_id for t in plan.tasks} == {0, 1}
    runs = []
    for _ in range(2):
        rt, out = Runtime(plan), []
        events = []
        rt.launch(JobInstance("System-Push-Input_0", push_array=X))
        rt.launch(JobInstance("job"))
        rt.launch(JobInstance("System-Pull-Return_0", on_pull=out.append))
        while (event := rt.step()) is not None:
            events.append((event.actor_name, event.read, event.written))
        runs.append(events)
        np.testing.assert_array_equal(out[0], np.maximum(X, 0) * 2)
        comm = [a for a in rt.actors.values() if a.task.task_type == "CopyCommNet"]
        assert comm and all(a.act_id == 1 for a in comm)  # each register crossed once
        assert rt.transport.messages == len(comm)
    assert runs[0] == runs[1]


def test_a_multi_device_plan_round_trips_through_json():
    from flowlab.ir import from_json, to_json

    plan = two_machine_session().plan
    back = from_json(to_json(plan))
    assert back == plan and str(back) == str(plan)
    assert any(t.sbp_signature is not None for t in back.tasks)


def test_an_in_place_update_through_boxing_is_a_compile_error():
    """An optimizer reading its variable through boxing would update a copy: refused, naming both SBPs."""
    from flowlab.compiler.compile import compile_job_set
    from flowlab.compiler.plan_builder import build_plan
    from flowlab.ir import SbpSignature, split

    flow.config.cpu_device_num(2)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            h = flow.layers.dense(x, 4, kernel_initializer=flow.truncated_normal(0.1), name="fc")
            loss = flow.math.reduce_mean(h * h)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    train_job(np.ones((4, 6), np.float32))  # compiles and runs as inferred
    jobs, _ = compile_job_set(list(flow.default_session().traced_jobs.values()))
    user = jobs[0]
    sig = dict(user.sbp_signatures["fc-weight_optimizer"].bn_in_op2sbp_parallel)
    sig["model_0"] = split(0)  # the update would take the (broadcast) weight split: a copy
    jobs[0] = user.replace(sbp_signatures={**user.sbp_signatures, "fc-weight_optimizer": SbpSignature(sig)})
    with pytest.raises(CompileError, match=r"op 'fc-weight_optimizer' \(sgd_update\) in job 'train_job' updates "
                                           r"variable 'fc-weight' in place, but takes 'model_0' as S\(0\)"):
        build_plan(jobs, 2)


def test_control_edges_cross_machines_through_copy_comm_net():
    """OneFlow links tasks on two machines only through a CopyCommNet task on the receiving machine (ticks are
    registers like any other there): the critical section's tick (machine 0) reaching the source-tick consumers of
    machine 1, machine 1's tasks reaching the sink tick on machine 0, and ordering edges between model I/O ops."""
    flow.config.cpu_device_num(2)
    flow.env.machine(["10.0.0.1", "10.0.0.2"])

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", ["0:0-1", "1:0-1"]):
            w = flow.get_variable("w", shape=(3,), initializer=flow.constant_initializer(2.0))
            return flow.math.relu(x * w)

    np.testing.assert_array_equal(job(X), np.maximum(X * 2, 0))
    plan = flow.default_session().plan
    check_plan(plan)
    tasks = {t.task_id: t for t in plan.tasks}
    regsts = plan.regst_descs
    crossing = [(tasks[r.producer_task_id], tasks[c]) for r in regsts.values() if r.is_ctrl
                for c in r.consumer_task_ids if tasks[c].machine_id != tasks[r.producer_task_id].machine_id]
    assert crossing and all(dst.task_type == "CopyCommNet" for _src, dst in crossing)
    ctrl_copies = [t for t in plan.tasks if t.task_type == "CopyCommNet"
                   and all(regsts[i].is_ctrl for i in t.consumed_ids)]
    assert {t.machine_id for t in ctrl_copies} == {0, 1}  # both directions
    for copy in ctrl_copies:
        (out,) = copy.produced_regst_desc.values()
        assert out.is_ctrl and all(tasks[c].machine_id == copy.machine_id for c in out.consumer_task_ids)
    # the verifier refuses a control register read straight across machines
    copy = ctrl_copies[0]
    (remote,) = copy.consumed_ids
    (out,) = copy.produced_regst_desc.values()
    dst = tasks[out.consumer_task_ids[0]]
    slot = next(k for k, ids in dst.consumed_regst_desc_id.items() if out.regst_desc_id in ids)
    with pytest.raises(CompileError, match="crosses machines only through a CopyCommNet task"):
        check_plan(_rewire(plan, dst, slot, out.regst_desc_id, remote))


@pytest.mark.parametrize("devices", [2, 3])
def test_an_op_reading_two_outputs_of_one_op_with_only_one_boxed(devices: int) -> None:
    """``matmul(a, b.T)`` over the two outputs of one ``identity_n`` on S(0): one argument stays the local piece, the
    other is boxed to B. Both outputs share the identity_n task's register, so the verifier (which checked every blob
    of a consumed register) refused the Plan; it now checks what each argument reads by the Plan's per-argument
    record (TaskProto.input_regst_ids), and still refuses a boxed argument rewired to read the piece directly."""
    flow.config.cpu_device_num(devices)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 3)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((6, 3)), y: tp.Numpy.Placeholder((5, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            a, b = flow.identity_n([x, y])
            return flow.matmul(a, b, transpose_b=True)

    np.testing.assert_allclose(job(x, y), x.astype(np.float64) @ y.T.astype(np.float64), rtol=1e-5, atol=1e-6)
    session = flow.default_session()
    plan = session.plan
    check_plan(plan, session.job_set)
    matmul = plan.tasks_of_op("job", "matmul_0")[0]
    (identity_out,) = {r.regst_desc_id for t in plan.tasks_of_op("job", "tuple_identity_0")[:1]
                       for r in t.produced_regst_desc.values() if not r.is_ctrl}
    boxed = [i for i, rid in enumerate(matmul.input_regst_ids) if rid != identity_out]
    assert len(boxed) == 1, matmul.input_regst_ids  # one argument from boxing, one straight from identity_n
    ids = list(matmul.input_regst_ids)
    ids[boxed[0]] = identity_out
    tampered = dataclasses.replace(matmul, input_regst_ids=tuple(ids))
    plan = dataclasses.replace(plan, tasks=tuple(tampered if t.task_id == matmul.task_id else t for t in plan.tasks))
    with pytest.raises(CompileError, match=r"matmul_0 \[0/\d\] reads blob 'tuple_identity_0/out_\d' as B directly"):
        check_plan(plan)
