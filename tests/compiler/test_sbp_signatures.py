"""SBP signatures of OneFlow's documented programs (oneflow-distributed.md §3.2-§3.4, §5), pinned.

Multi-device jobs are compiled (placement, passes, SBP inference, then the multi-device Plan) and run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import flowlab as flow
import flowlab.typing as tp
from flowlab.ir import from_json, to_json
from tests.helpers.sbp_jobs import job_set_of, mlp_train, sig

B, P = "B", "P"
S0, S1 = "S(0)", "S(1)"


def grad_producer(job: Any, var: str) -> str:
    """The op making the gradient a variable's update op consumes."""
    return job.op(f"{var}_optimizer").inputs["model_diff"][0].rpartition("/")[0]


def test_data_parallel_mlp_train_job():
    """§3.2: inputs S(0), variables B, matmul [S0, B -> S0]; weight gradients P (reduced to B into the update)."""
    job_set = mlp_train()
    job = job_set.job("train_job")
    for op in job.ops:  # gradients beside their forward ops, updates beside their variables; the train step,
        # learning rate and (allow_cpu_return_op) returns on cpu 0:0, as OneFlow places them
        on_both = op.created_by in ("user", "autograd", "optimizer") and op.op_type != "return"
        assert str(op.parallel_conf) == ("cpu:0:0-1" if on_both else "cpu:0:0"), (op.name, op.parallel_conf)
    assert sig(job, "Input_0") == {"out": S0} and sig(job, "Input_1") == {"out": S0}
    assert sig(job, "reshape_0") == {"in_0": S0, "out_0": S0}
    for layer in ("dense1", "dense2"):
        assert sig(job, f"{layer}-weight") == {"out": B} and sig(job, f"{layer}-bias") == {"out": B}
        assert sig(job, f"{layer}-matmul") == {"a_0": S0, "b_0": B, "out_0": S0}
        assert sig(job, f"{layer}-bias_add") == {"a_0": S0, "b_0": B, "out_0": S0}
        for var in (f"{layer}-weight", f"{layer}-bias"):
            grad = grad_producer(job, var)
            assert list(sig(job, grad).values())[-1] == P, (var, grad, sig(job, grad))
            assert set(sig(job, f"{var}_optimizer").values()) == {B}  # model, diff (P -> B), momentum, lr
            assert sig(job, f"{var}-momentum") == {"out": B}
    assert sig(job, "softmax_loss") == {"prediction_0": S0, "label_0": S0, "prob_0": S0, "out_0": S0}
    # the push job's output lies like the user job's input; model-io variables like the user job's
    assert sig(job_set.job("System-Push-Input_0"), "Input_0") == {"in": S0, "out": S0}
    assert sig(job_set.job("System-ModelInit"), "dense1-weight") == {"out": B}


def test_mixed_parallel_mlp():
    """§3.4: dense2 with model_distribute=split(0): weight (units, in) and bias split on the units."""
    job_set = mlp_train(flow.distribute.split(0))
    job = job_set.job("train_job")
    assert sig(job, "dense2-weight") == {"out": S0} and sig(job, "dense2-bias") == {"out": S0}
    assert sig(job, "dense2-matmul") == {"a_0": B, "b_0": S0, "out_0": S1}  # hidden S(0) -> B boxing
    assert sig(job, "dense2-bias_add") == {"a_0": S1, "b_0": S0, "out_0": S1}
    assert sig(job, "softmax_loss") == {"prediction_0": S0, "label_0": S0, "prob_0": S0, "out_0": S0}
    assert sig(job, "dense1-matmul") == {"a_0": S0, "b_0": B, "out_0": S0}  # dense1 stays data parallel
    for var in ("dense2-weight", "dense2-bias"):
        # OneFlow's ParallelCast, pruned: the update reads the gradient with the variable's SBP; the gradient's
        # producer keeps what its own inputs give (a partial sum over the batch slices), reduce-scattered between
        assert list(sig(job, grad_producer(job, var)).values())[-1] == P
        assert sig(job, f"{var}_optimizer")["model_diff_0"] == S0
        assert set(sig(job, f"{var}_optimizer").values()) == {S0, B}
        assert sig(job, f"{var}_optimizer")["learning_rate_0"] == B
        assert sig(job, f"{var}-momentum") == {"out": S0}  # the optimizer state lies like its variable
    for var in ("dense1-weight", "dense1-bias"):
        assert list(sig(job, grad_producer(job, var)).values())[-1] == P
    assert sig(job_set.job("System-ModelSave"), "dense2-weight") == {"out": S0}


def test_every_op_of_every_job_has_a_signature_naming_each_of_its_blobs():
    for job in mlp_train(flow.distribute.split(0)):
        for op in job.ops:
            assert op.name in job.sbp_signatures, (job.name, op.name)
            bns = {lbn.rpartition("/")[2] for lbn in op.output_lbns}
            assert bns <= set(job.sbp_signatures[op.name].bn_in_op2sbp_parallel), (job.name, op.name)


def test_str_job_shows_signatures_on_several_devices():
    job = mlp_train().job("train_job")
    text = str(job)
    line = next(line for line in text.splitlines() if line.startswith("  %dense1-matmul/out_0"))
    assert line.endswith(" @cpu:0:0-1 sbp={a_0: S(0), b_0: B, out_0: S(0)}" + line[line.index("  # "):])
    assert "# sbp_jobs.py:" in line  # where tests/helpers/sbp_jobs.py defines mlp_train
    assert "%Return_0/out : f32[8] = return(%softmax_loss/out_0)  # " in text  # one device: no sbp printed


def test_json_round_trip_keeps_signatures_and_hints():
    job_set = mlp_train(flow.distribute.split(0))
    back = from_json(to_json(job_set))
    assert back == job_set
    job = back.job("train_job")
    assert str(job.sbp_signatures["dense2-matmul"]) == "{a_0: B, b_0: S(0), out_0: S(1)}"
    assert str(job.sbp_hints["dense2-weight"]) == "{out: S(0)}"


def test_one_device_jobs_record_s0_everywhere_and_print_as_before():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    out = pad_Job(np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3))
    np.testing.assert_array_equal(out, np.pad(np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3),
                                              ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    session = flow.default_session()
    for job in session.job_set:
        for op in job.ops:
            assert set(sig(job, op.name).values()) <= {S0}, (job.name, op.name)
    assert "sbp=" not in str(session.job_set)


def test_hints_are_honoured_as_in_oneflows_boxing_test():
    """OneFlow's test_boxing_v2.py programs: with_distribute picks each identity's SBP; reduce_sum over the split
    axis gives P; get_variable(distribute=) fixes a variable's."""
    flow.config.cpu_device_num(3)
    split, broadcast = flow.distribute.split, flow.distribute.broadcast

    @flow.global_function()
    def boxing_job(x: tp.Numpy.Placeholder((6, 9))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            a = flow.identity(x.with_distribute(split(0)))
            p = flow.math.reduce_sum(a, axis=0)  # S(0) summed over the split axis: a partial sum
            w = flow.get_variable("w", shape=(6, 9), distribute=split(1))
        with flow.scope.placement("cpu", "0:0-2"):
            b = flow.identity(a.with_distribute(split(1)))  # S(0) on 2 devices -> S(1) on 3
            c = flow.identity(p.with_distribute(broadcast()))  # P -> B
            return b + w + c

    job = job_set_of(lambda: boxing_job(np.zeros((6, 9), np.float32))).job("boxing_job")
    assert sig(job, "identity_0") == {"in_0": S0, "out_0": S0}
    assert sig(job, "reduce_sum_0") == {"input_tensor_0": S0, "output_tensor_0": P}
    assert sig(job, "w") == {"out": S1}
    assert sig(job, "identity_1") == {"in_0": S1, "out_0": S1}
    assert sig(job, "identity_2") == {"in_0": B, "out_0": B}
    assert str(job.sbp_hints["identity_1"]) == "{in_0: S(1)}"


def test_model_io_ops_lie_with_their_variables():
    job_set = mlp_train(flow.distribute.split(0))
    init, save = job_set.job("System-ModelInit"), job_set.job("System-ModelSave")
    assert str(init.op("System-ModelInit-dense2-weight").parallel_conf) == "cpu:0:0-1"
    assert sig(init, "System-ModelInit-dense2-weight") == {"ref": S0}  # written in place, piece by piece
    assert sig(save, "System-ModelSave-dense2-weight") == {"path": B, "ref": S0}  # every device gets the path
    assert sig(save, "System-ModelSave-dense1-weight") == {"path": B, "ref": B}
