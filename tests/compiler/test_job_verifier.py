"""The job verifier: a pass that breaks a job fails at that pass, naming the pass, the job, the op and the problem.

Each broken pass below is run through the real pipeline of a real compile (inserted among the user-job passes), so
the test also shows that the verifier is wired in after every recorded pass.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler import JobVerifyError, check_job
from flowlab.compiler import compile as compile_module
from flowlab.compiler.passes import run_pipeline
from flowlab.ir import BlobDesc, Job, OpConf
from flowlab.ir.dtype import float32


def define_job():
    @flow.global_function()
    def verify_Job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.math.relu(x * 2.0)

    return verify_Job


def drop_op(job: Job) -> Job:  # drops the multiply its consumer reads
    return job.replace(ops=tuple(op for op in job.ops if op.op_type != "scalar_mul"))


def duplicate_name(job: Job) -> Job:
    relu = next(op for op in job.ops if op.op_type == "relu")
    clone = OpConf(relu.name, "identity", relu.inputs, {"out": (f"{relu.name}/other",)}, created_by="BrokenPass")
    descs = {**job.blob_descs, f"{relu.name}/other": job.blob_descs[relu.output_lbns[0]]}
    return job.replace(ops=(*job.ops, clone), blob_descs=descs)


def reorder_ops(job: Job) -> Job:
    return job.replace(ops=tuple(reversed(job.ops)))


def drop_blob_desc(job: Job) -> Job:
    relu = next(op for op in job.ops if op.op_type == "relu")
    return job.replace(blob_descs={k: v for k, v in job.blob_descs.items() if k != relu.output_lbns[0]})


def bad_ctrl_in(job: Job) -> Job:
    ops = tuple(op.replace(ctrl_in_op_names=("Nowhere",)) if op.op_type == "relu" else op for op in job.ops)
    return job.replace(ops=ops)


@pytest.mark.parametrize(("broken", "problem"), [
    (drop_op, r"op 'relu_\d+' \(relu.*\): input 'scalar_mul_\d+/y_0' is produced by no op of the job"),
    (duplicate_name, r"op 'relu_\d+' \(identity.*\): its name is used by an earlier op of the job too"),
    (reorder_ops, r"input '.*' is produced by a later op \(the ops are not in topological order\)"),
    (drop_blob_desc, r"op 'relu_\d+' \(relu, test_job_verifier\.py:\d+, created by user\): "
                     r"output 'relu_\d+/y_0' has no blob desc"),
    (bad_ctrl_in, r"op 'relu_\d+' .*: ctrl_in op 'Nowhere' is not an op of the job"),
], ids=["drop_op", "duplicate_name", "reorder_ops", "drop_blob_desc", "bad_ctrl_in"])
def test_a_broken_pass_fails_at_that_pass(monkeypatch, broken, problem):
    passes = [*compile_module.USER_JOB_PASSES]
    passes.insert(2, ("BrokenPass", broken))
    monkeypatch.setattr(compile_module, "USER_JOB_PASSES", passes)
    job = define_job()
    with pytest.raises(JobVerifyError) as info:
        job(np.ones((2, 3), np.float32))
    message = str(info.value)
    assert message.startswith("after pass 'BrokenPass', job 'verify_Job' is malformed"), message
    assert re.search(problem, message), message


def test_the_passes_before_the_broken_one_ran_and_were_fine(monkeypatch):
    seen = []

    def spy(job: Job) -> Job:
        seen.append(job.name)
        return job

    monkeypatch.setattr(compile_module, "USER_JOB_PASSES", [*compile_module.USER_JOB_PASSES, ("Spy", spy)])
    define_job()(np.ones((2, 3), np.float32))
    assert seen == ["verify_Job"]


def test_the_verifier_checks_the_job_as_given_before_the_first_pass():
    desc = BlobDesc((2,), float32)
    job = Job("j", "user", (OpConf("a", "relu", {"x": ("b/out",)}, {"y": ("a/y",)}),), {"a/y": desc})
    with pytest.raises(JobVerifyError, match=r"^as traced, job 'j' is malformed .*\n  op 'a' \(relu, created by "
                                            r"user\): input 'b/out' is produced by no op of the job$"):
        run_pipeline(job, [], made_by="as traced")


def test_every_problem_is_listed_and_blob_descs_must_be_complete():
    bad = BlobDesc((2,), float32)
    object.__setattr__(bad, "shape", (2, -1))  # only a corrupt desc can hold a negative dim
    ops = (OpConf("a", "input", outputs={"out": ("a/out",)}), OpConf("b", "relu", {"x": ("a/out",)},
                                                                     {"y": ("x/y",)}))
    job = Job("j", "user", ops, {"a/out": bad, "x/y": BlobDesc((2,), float32)}, return_op_names=("r",))
    with pytest.raises(JobVerifyError) as info:
        check_job(job)
    assert str(info.value).splitlines() == [
        "job 'j' is malformed (3 problems):",
        "  op 'a' (input, created by user): output 'a/out' has blob desc shape (2, -1); expected a tuple of ints >= 0",
        "  op 'b' (relu, created by user): output 'x/y' does not name its producer (expected 'b/<blob>')",
        "  return_op_names names 'r', which is not an op of the job",
    ]


def test_every_job_of_a_compiled_training_session_verifies():
    """Compiling already verifies each job; this says so directly, for the user, system and main jobs."""

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3, 2), initializer=flow.random_normal_initializer(seed=1))
        loss = flow.math.reduce_mean(flow.matmul(x, w))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
        return loss

    train_job(np.ones((4, 3), np.float32))
    session = flow.default_session()
    kinds = set()
    for job in session.job_set:
        check_job(job)
        kinds.add(job.kind)
    assert kinds == {"user", "push", "pull", "model_io", "main"}


def test_a_scrambled_big_job_lists_twenty_problems_and_counts_the_rest():
    ops = tuple(OpConf(f"o{i}", "relu", {"x": (f"o{i + 1}/y",)}, {"y": (f"o{i}/y",)}) for i in range(30))
    job = Job("big", "user", ops, {op.output_lbns[0]: BlobDesc((1,), float32) for op in ops})
    with pytest.raises(JobVerifyError) as info:
        check_job(job, "after pass 'Scramble'")
    lines = str(info.value).splitlines()
    assert lines[0] == "after pass 'Scramble', job 'big' is malformed (30 problems):"
    assert len(lines) == 22 and lines[-1] == "  ... and 10 more"
    assert lines[1] == ("  op 'o0' (relu, created by user): input 'o1/y' is produced by a later op "
                        "(the ops are not in topological order)")
