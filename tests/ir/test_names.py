"""Names: an empty op name is an error at the user's line; a job function's old handle, after a new function of
the same name replaced it, says so (its session was not cleared)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError, SessionStateError


@pytest.mark.parametrize("make", [
    lambda x: flow.math.relu(x, name=""),
    lambda x: flow.identity(x, name=""),
    lambda x: flow.get_variable("", shape=(3,)),
])
def test_an_empty_op_name_is_an_error_at_the_users_line(make):
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return make(x)

    with pytest.raises(OpInferError, match=r"test_names\.py:\d+: .*op name is empty"):
        job(np.zeros(3, np.float32))


def test_an_empty_op_name_inside_a_namespace_is_an_error_too():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        with flow.scope.namespace("block"):
            return flow.math.relu(x, name="")

    with pytest.raises(OpInferError, match="op name is empty"):
        job(np.zeros(3, np.float32))


def _define(scale: float):
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.math.multiply(x, flow.constant(scale, dtype=flow.float, shape=(3,)))

    return job


def test_an_old_handle_of_a_redefined_job_says_it_was_replaced_after_start():
    old = _define(2.0)
    new = _define(3.0)
    np.testing.assert_array_equal(new(np.ones(3, np.float32)), np.full(3, 3, np.float32))
    with pytest.raises(SessionStateError) as err:
        old(np.ones(3, np.float32))
    message = str(err.value)
    assert "cleared" not in message
    assert "'job'" in message and "redefined" in message and "test_names.py:" in message


def test_an_old_handle_of_a_redefined_job_does_not_replace_the_new_one_before_start():
    old = _define(2.0)
    new = _define(3.0)
    with pytest.raises(SessionStateError, match="redefined"):
        old(np.ones(3, np.float32))
    np.testing.assert_array_equal(new(np.ones(3, np.float32)), np.full(3, 3, np.float32))


def test_a_handle_from_a_cleared_session_still_says_cleared():
    old = _define(2.0)
    flow.clear_default_session()
    _other = _define(5.0)
    _other(np.ones(3, np.float32))
    with pytest.raises(SessionStateError, match="cleared"):
        old(np.ones(3, np.float32))


@pytest.mark.parametrize("make,message", [
    (lambda x: x + flow.get_variable("", shape=(3,)), r"test_names\.py:\d+: op name is empty"),
    (lambda x: flow.nn.dropout(x, rate=0.5, name=""), r"test_names\.py:\d+: op name is empty"),
    (lambda x: flow.layers.dense(x, 2, name=""), "a name scope needs a non-empty string"),
])
def test_an_empty_name_inside_a_namespace_never_becomes_the_scope_prefix(make, message):
    """An empty name joined to a scope used to give 'block-' (a variable, a dropout op); it is an error."""

    @flow.global_function(type="train")
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        with flow.scope.namespace("block"):
            y = make(x)
        loss = flow.math.reduce_mean(y * flow.get_variable("w", shape=(1,), initializer=flow.ones_initializer()))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    with pytest.raises(ValueError, match=message):  # OpInferError is a ValueError
        job(np.zeros((2, 3), np.float32))
