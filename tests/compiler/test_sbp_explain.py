"""flow.debug.explain_sbp: the candidates, their order values and copy costs, the choice and the boxing."""

from __future__ import annotations

import json

import numpy as np

import flowlab as flow
import flowlab.typing as tp
from tests.helpers.sbp_jobs import mlp_train


def test_explain_a_data_parallel_matmul():
    job = mlp_train().job("train_job")
    ex = flow.debug.explain_sbp(job, "dense1-matmul")
    text = str(ex)
    lines = text.splitlines()
    assert lines[0].startswith("op dense1-matmul (matmul) of job train_job on cpu:0:0-1  # sbp_jobs.py:")
    assert "  input a_0 = %reshape_0/out_0 @cpu:0:0-1: S(0) (batch axis 0)" in lines
    assert "  input b_0 = %dense1-weight/out @cpu:0:0-1: B" in lines
    # order values by hand (oneflow-distributed.md §2.2): a_0 S(0) = S(batch axis) -1, = producer -8;
    # b_0 B: no batch axis, producer and candidate unsplit -2, = producer -8; out_0 S(batch axis 0) -1
    assert "  * {a_0: S(0), b_0: B, out_0: S(0)}  order -20  cost 0 B" in lines
    # all-B: a_0 moves S(0) -> B: the blob's bytes (8 x 16 float32)
    assert "    {a_0: B, b_0: B, out_0: B}  order -10  cost 512 B" in lines
    # a partial-sum input never comes for free
    assert "    {a_0: P, b_0: B, out_0: P}  order -10  cost infinite (a partial-sum input)" in lines
    assert lines[-2:] == ["  chosen: {a_0: S(0), b_0: B, out_0: S(0)}", "  boxing: none"]


def test_costs_read_as_bytes_not_sentinel_sums():
    # issue 24: explain_sbp printed 2147491839 (INT32_MAX for a broadcast input made P... plus 8 KiB) raw
    from flowlab.compiler.sbp_infer import INT32_MAX, INT64_MAX
    from flowlab.debug.sbp import format_cost

    assert format_cost(0) == "0 B" and format_cost(8192) == "8,192 B"
    assert format_cost(INT32_MAX + 8192) == "8,192 B + 1 x INT32_MAX (an input leaving B)"
    assert format_cost(2 * INT32_MAX) == "2 x INT32_MAX (inputs leaving B)"
    assert format_cost(INT64_MAX) == "infinite (a partial-sum input)"
    job = mlp_train().job("train_job")
    text = str(flow.debug.explain_sbp(job, "dense1-matmul"))
    assert "-8 per input that stays as its producer made it" in text
    assert not any(str(v) in text for v in (INT32_MAX, INT64_MAX))


def test_explain_shows_hints_exclusions_and_the_boxing_asked_for():
    job = mlp_train(flow.distribute.split(0)).job("train_job")
    ex = flow.debug.explain_sbp(job, "dense2-matmul")
    text = str(ex)
    assert "  hints: b_0: S(0)" in text
    assert "excluded: hint b_0: S(0)" in text
    assert "  chosen: {a_0: B, b_0: S(0), out_0: S(1)}" in text
    assert "  boxing: a_0: S(0) @cpu:0:0-1 -> B @cpu:0:0-1" in text  # hidden is gathered on every device
    d = ex.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["chosen"] == {"a_0": "B", "b_0": "S(0)", "out_0": "S(1)"}
    assert d["boxing"] == ["a_0: S(0) @cpu:0:0-1 -> B @cpu:0:0-1"]
    assert sum(c["excluded"] is None for c in d["candidates"]) == 1


def test_explain_a_one_device_op():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.math.relu(x)

    job(np.zeros((2, 3), np.float32))
    ex = flow.debug.explain_sbp(flow.default_session().job_set.job("job"), "relu_0")
    assert "one device: every blob S(0), no candidates considered" in str(ex)
    assert ex.to_dict()["chosen"] == {"x_0": "S(0)", "y_0": "S(0)"}


def test_batch_axes_follow_the_ops_as_oneflows_batch_axis_does():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        t = flow.transpose(x, perm=[1, 0])  # the batch axis moves to 1
        s = flow.math.reduce_sum(t, axis=1)  # summed away: no batch axis
        return flow.math.relu(t) + flow.reshape(s, [6, 1])

    from tests.helpers.sbp_jobs import job_set_of

    user = job_set_of(lambda: job(np.zeros((4, 6), np.float32))).job("job")
    assert flow.debug.explain_sbp(user, "transpose_0").decision.batch_axes == {"input_0": 0, "output_0": 1}
    assert flow.debug.explain_sbp(user, "reduce_sum_0").decision.batch_axes == {
        "input_tensor_0": 1, "output_tensor_0": None}
    # transpose keeps the batch split: x S(0) becomes S(1); the sum over it is a partial sum
    assert str(user.sbp_signatures["transpose_0"]) == "{input_0: S(0), output_0: S(1)}"
    assert str(user.sbp_signatures["reduce_sum_0"]) == "{input_tensor_0: S(1), output_tensor_0: P}"
