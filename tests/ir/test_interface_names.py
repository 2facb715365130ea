"""Interface names: ops with the same name in several jobs share memory, so a generated ``Input_<n>`` /
``Return_<n>`` must never be a name a user op already has, a user op may not take a generated name, and
same-named interface ops of different kinds (variable, input, return) are a compile error, never shared memory."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler import compile_jobs
from flowlab.errors import CompileError, OpInferError
from flowlab.ir import BlobDesc, Job, OpConf
from flowlab.ir.dtype import float32

ONES = {"type": "constant", "value": 1.0}


def test_a_variable_named_like_a_generated_input_keeps_its_value():
    """The issue's scenario: a variable 'Input_0' in one job, a placeholder in a job traced after it."""

    @flow.global_function()
    def reader() -> tp.Numpy:
        return flow.get_variable("Input_0", shape=(3,), initializer=ONES)

    @flow.global_function()
    def echo(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.math.relu(x)

    np.testing.assert_array_equal(echo(np.full(3, 7, np.float32)), np.full(3, 7, np.float32))
    np.testing.assert_array_equal(reader(), np.ones(3, np.float32))  # not overwritten by the push
    session = flow.default_session()
    assert session.traced_jobs["echo"].input_op_names != ("Input_0",)
    assert "Input_0" not in session.job_set.job("echo").interface_op_names


def test_a_generated_return_name_skips_user_names_in_the_same_job():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        flow.get_variable("Return_0", shape=(3,), initializer=ONES)
        return flow.math.relu(x)

    np.testing.assert_array_equal(job(np.full(3, 2, np.float32)), np.full(3, 2, np.float32))
    assert flow.default_session().traced_jobs["job"].return_op_names == ("Return_1",)
    np.testing.assert_array_equal(flow.get_all_variables()["Return_0"], np.ones(3, np.float32))


def test_a_user_op_taking_an_already_generated_name_is_an_error_at_its_line():
    @flow.global_function()
    def echo(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return x

    @flow.global_function()
    def reader() -> tp.Numpy:
        return flow.get_variable("Input_0", shape=(3,), initializer=ONES)  # the line the error names

    with pytest.raises(OpInferError) as err:
        echo(np.zeros(3, np.float32))
    message = str(err.value)
    assert "test_interface_names.py:" in message
    assert "'Input_0'" in message and "'reader'" in message and "'echo'" in message
    assert "generated" in message


def test_a_user_op_named_like_a_generated_return_of_an_earlier_job():
    @flow.global_function()
    def first(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return x

    @flow.global_function()
    def second(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.math.relu(x, name="Return_0")

    with pytest.raises(OpInferError, match=r"'Return_0'.*'first'"):
        first(np.zeros(3, np.float32))


def _job(name: str, op_type: str, op_name: str, desc: BlobDesc, extra_in: str | None = None) -> Job:
    """A user job holding one interface op ``op_name`` of ``op_type`` (built directly, as a pass could)."""
    lbn = f"{op_name}/out"
    ops: list[OpConf] = []
    descs = {lbn: desc}
    if op_type == "return":
        ops.append(OpConf("src", "variable", outputs={"out": ("src/out",)},
                          attrs={"shape": desc.shape, "dtype": desc.dtype, "initializer": ONES,
                                 "random_seed": 0, "trainable": False}))
        descs["src/out"] = desc
        ops.append(OpConf(op_name, "return", inputs={"in": ("src/out",)}, outputs={"out": (lbn,)}))
        return Job(name, "user", tuple(ops), descs, {"job_type": "predict"}, return_op_names=(op_name,))
    if op_type == "input":
        ops.append(OpConf(op_name, "input", outputs={"out": (lbn,)},
                          attrs={"shape": desc.shape, "dtype": desc.dtype, "batch_axis": 0}))
        return Job(name, "user", tuple(ops), descs, {"job_type": "predict"}, input_op_names=(op_name,))
    ops.append(OpConf(op_name, "variable", outputs={"out": (lbn,)},
                      attrs={"shape": desc.shape, "dtype": desc.dtype, "initializer": ONES, "random_seed": 0,
                             "trainable": False}))
    return Job(name, "user", tuple(ops), descs, {"job_type": "predict"})


KINDS = ["variable", "input", "return"]


@pytest.mark.parametrize("kind_a", KINDS)
@pytest.mark.parametrize("kind_b", KINDS)
def test_same_named_interface_ops_of_different_kinds_do_not_compile(kind_a, kind_b):
    desc = BlobDesc((3,), float32)
    jobs = [_job("job_a", kind_a, "shared", desc), _job("job_b", kind_b, "shared", desc)]
    if kind_a == kind_b == "variable":  # the same variable in two jobs: one memory, as in OneFlow
        result = compile_jobs(jobs)
        assert set(result.job_set.shared_interfaces["shared"]) >= {"job_a", "job_b"}
        return
    with pytest.raises(CompileError) as err:
        compile_jobs(jobs)
    message = str(err.value)
    assert "'shared'" in message and "'job_a'" in message and "'job_b'" in message
    assert kind_a in message and kind_b in message
