"""Golden prints of Job, JobSet and Plan, and JSON round trips of all three."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.ir import from_json, to_json

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)


@pytest.fixture
def session():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            return flow.reflection_pad2d(x, padding=1)

    pad_Job(X)
    return flow.default_session()


def test_traced_job_prints_one_op_per_line(session):
    line = session.function_descs["pad_Job"].job_func.__code__.co_firstlineno
    assert str(session.traced_jobs["pad_Job"]) == "\n".join([
        "job pad_Job (user, predict):",
        f"  %Input_0/out : f32[2,1,3,3] = input() {{batch_axis=0}}  # test_ir_print_json.py:{line}",
        "  %reflection_pad2d_0/y_0 : f32[2,1,5,5] = reflection_pad2d(%Input_0/out) {padding=[1,1,1,1]}"
        f"  # test_ir_print_json.py:{line + 3}",
        f"  %Return_0/out : f32[2,1,5,5] = return(%reflection_pad2d_0/y_0)  # test_ir_print_json.py:{line}",
    ])


def test_system_jobs_print(session):
    assert str(session.job_set.job("System-Push-Input_0")) == "\n".join([
        "job System-Push-Input_0 (push, system):",
        "  %System-AutoTick-SourceTick = source_tick()  <AutoSourceTick>",
        "  %System-Push-Input_0-ForeignInput/out : f32[2,1,3,3] = foreign_input() "
        "{ofblob_buffer_name='ForeignInput-System-Push-Input_0'} ctrl_in=[System-AutoTick-SourceTick]  <system>",
        "  %Input_0/out : f32[2,1,3,3] = output(%System-Push-Input_0-ForeignInput/out)  <system>",
        "  %System-AutoTick-SinkTick = sink_tick() ctrl_in=[Input_0]  <AutoSinkTick>",
    ])
    main = str(session.job_set.job("System-Main")).splitlines()
    assert main[1] == ("  %System-Main-WaitAndSendIds_0/out : i32[1] = wait_and_send_ids() "
                       "{wait_buffer_name='GlobalWaitJobId', id_list=[[0],[1],[2]]}  <system>")
    assert main[3].startswith("  %System-Main-Case_0/out_0, %System-Main-Case_0/out_1, %System-Main-Case_0/out_2 : "
                              "i32[1], i32[1], i32[1] = case(%System-Main-ReentrantLock_0/out) {num_branches=3}")
    shared = ("shared interface blobs:\n  Input_0: pad_Job, System-Push-Input_0\n"
              "  Return_0: pad_Job, System-Pull-Return_0")
    assert shared in str(session.job_set)


def test_plan_prints_one_task_per_line(session):
    lines = str(session.plan).splitlines()
    assert lines[0] == "plan: 18 tasks, 21 regsts, 10 mem blocks"
    assert lines[1] == "job 0 pad_Job (user):"
    assert lines[2] == ("  task 0:0:0 NormalForward Input_0 | consumes in_ctrl=[r15] | "
                        "produces out=r0(Input_0/out:f32[2,1,3,3]) x1 @blk0+0")
    assert lines[3] == ("  task 0:0:1 NormalForward reflection_pad2d_0 | consumes in=[r0] | "
                        "produces out=r1(reflection_pad2d_0/y_0:f32[2,1,5,5]) x1 @blk2+0")
    assert "  block 0: 128 B host jobs=[0,1] fixed" in lines
    assert "  cs 0: job 0 total_job blocks=[0,1,2]" in lines


def test_pass_records_say_what_changed(session):
    records = [str(r) for r in session.passes if r.job_name == "pad_Job"]
    assert records == [
        # the training passes run on every user job; predict: no-ops (and no mirrored op to split for)
        "AutoDistributeSplit on pad_Job: no change",
        "OptimizerPlacementOptimizationPass on pad_Job: no change",
        "AutoTrainStep on pad_Job: no change",
        "AutoLearningRate on pad_Job: no change",
        "GenerateBackwardAndOptimizerOpConfs on pad_Job: no change",
        "SplitSparseSoftmaxCrossEntropyOpPass on pad_Job: no change",
        "AddLbiDiffWatcherOpConfs on pad_Job: no change",
        "AutoSourceTick on pad_Job: +[System-AutoTick-SourceTick] ~[Input_0]",
        "AutoSinkTick on pad_Job: +[System-AutoTick-SinkTick]",
        "InferSbpSignatures on pad_Job: sbp[5 ops]",  # every op gets its signature (one device: all S(0))
    ]


@pytest.mark.parametrize("what", ["job", "job_set", "plan"])
def test_json_round_trip(session, what):
    obj = {"job": session.job_set.job("pad_Job"), "job_set": session.job_set, "plan": session.plan}[what]
    text = to_json(obj)
    back = from_json(text)
    assert back == obj
    assert str(back) == str(obj)
    assert to_json(back) == text


def test_json_rejects_other_versions():
    with pytest.raises(ValueError, match="not flowlab JSON of version 1"):
        from_json('{"flowlab_json": 99, "value": 1}')
