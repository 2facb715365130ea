"""Front-end behaviour: tracing at first call, op naming, name scopes, placement, dtypes, variables, sessions."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.ops.variable import get_variable

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)


def test_dtypes_match_oneflow_names_and_enums():
    assert flow.float is flow.float32 and flow.double is flow.float64
    assert [(d.name, d.proto_name, d.proto_id) for d in (flow.char, flow.float16, flow.int8, flow.int32,
                                                          flow.int64, flow.uint8)] == [
        ("char", "kChar", 1), ("float16", "kFloat16", 9), ("int8", "kInt8", 4), ("int32", "kInt32", 5),
        ("int64", "kInt64", 6), ("uint8", "kUInt8", 7)]
    assert flow.float32.np == np.float32 and repr(flow.int64) == "flow.int64"


def test_nothing_is_traced_until_the_first_call_and_all_jobs_compile_together():
    traced = []

    @flow.global_function()
    def a(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        traced.append("a")
        return flow.zero_pad2d(x, padding=1)

    @flow.global_function()
    def b(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        traced.append("b")
        return flow.zero_pad2d(x, padding=2)

    session = flow.default_session()
    assert traced == [] and session.status.value == "OPEN" and session.compiled is None
    b(X)
    assert traced == ["a", "b"] and session.status.value == "RUNNING"
    a(X)
    b(X)
    assert traced == ["a", "b"]  # later calls only run


def test_op_names_unique_user_given_and_scoped():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        a = flow.zero_pad2d(x, padding=1)
        b = flow.zero_pad2d(a, padding=1, name="mine")
        with flow.scope.namespace("outer"), flow.scope.namespace("inner"):
            c = flow.zero_pad2d(b, padding=1)
            w = get_variable("w", shape=(3,))
        assert (a.op_name, b.op_name, c.op_name, w.op_name) == (
            "zero_pad2d_0", "mine", "outer-inner-zero_pad2d_1", "outer-inner-w")
        assert c.lbn == "outer-inner-zero_pad2d_1/y_0" and c.shape == (2, 1, 9, 9) and c.dtype is flow.float32
        return c

    np.testing.assert_array_equal(job(X), np.pad(X, ((0, 0), (0, 0), (3, 3), (3, 3))))


def test_duplicate_op_name_is_an_error():
    from flowlab.errors import OpInferError

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        flow.zero_pad2d(x, padding=1, name="same")
        return flow.zero_pad2d(x, padding=1, name="same")

    with pytest.raises(OpInferError, match="op name 'same' is already used in job 'job'"):
        job(X)


def test_placement_is_recorded_per_op_and_lists_are_accepted():
    flow.config.cpu_device_num(2)
    config = flow.function_config()  # the default placement would be both devices, "0:0-1"
    config.default_placement_scope(flow.scope.placement("cpu", "0:0"))

    @flow.global_function(function_config=config)
    def job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", ["0:1"]):
            return flow.zero_pad2d(x, padding=1)

    job(X)
    session = flow.default_session()
    op = session.job_set.job("job").op("zero_pad2d_0")
    assert str(op.parallel_conf) == "cpu:0:1"
    assert next(t for t in session.plan.tasks if t.name == "zero_pad2d_0").thrd_id == 1  # cpu device 1's thread
    assert "@cpu:0:1" in str(session.job_set.job("job"))


def test_default_placement_scope_from_function_config():
    flow.config.cpu_device_num(2)
    config = flow.function_config()
    config.default_placement_scope(flow.scope.placement("cpu", "0:1"))

    @flow.global_function(function_config=config)
    def job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.zero_pad2d(x, padding=1)

    job(X)
    assert str(flow.default_session().job_set.job("job").op("zero_pad2d_0").parallel_conf) == "cpu:0:1"


def test_variables_are_initialized_at_start_and_readable():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        get_variable("v", shape=(2, 3), initializer={"type": "constant", "value": 1.5})
        get_variable("z", shape=(4,), dtype=flow.int32)
        return flow.zero_pad2d(x, padding=1)

    values = flow.get_all_variables()  # starts the session: System-ModelInit runs once
    assert sorted(values) == ["v", "z"]
    np.testing.assert_array_equal(values["v"], np.full((2, 3), 1.5, np.float32))
    np.testing.assert_array_equal(values["z"], np.zeros(4, np.int32))
    assert values["z"].dtype == np.int32
    values["v"][:] = 7  # a copy: the live variable is unchanged
    np.testing.assert_array_equal(flow.get_all_variables()["v"], np.full((2, 3), 1.5, np.float32))
    init = flow.default_session().runtime.actor("System-ModelInit-v")
    assert init.act_id == 1


def test_sync_and_clear_default_session():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Callback[tp.Numpy]:
        return flow.zero_pad2d(x, padding=1)

    got = []
    job(X)(got.append)
    flow.sync_default_session()
    assert len(got) == 1
    old = flow.default_session()
    flow.clear_default_session()
    assert old.status.value == "CLOSED" and flow.default_session() is not old
    assert flow.default_session().status.value == "OPEN"


def test_string_annotations_may_name_locals_of_the_defining_scope():
    batch = 3  # this module uses `from __future__ import annotations`: the annotation is the string "(batch, 2)"

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((batch, 2))) -> tp.Numpy:
        return x * 2.0

    np.testing.assert_array_equal(job(np.ones((3, 2), np.float32)), np.full((3, 2), 2.0, np.float32))


def test_a_job_function_reused_after_clearing_the_session_launches_its_new_interface_names():
    """Input_<n>/Return_<n> are numbered across a session: traced without job_a, job_b's input becomes Input_0, and
    the push/pull jobs a call launches must follow (the names one call launches are cached per function)."""
    flow.clear_default_session()

    @flow.global_function()
    def job_a(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return x + 1.0

    @flow.global_function()
    def job_b(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return x * 2.0

    x2, x3 = np.ones(2, np.float32), np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(job_a(x2), x2 + 1)
    np.testing.assert_array_equal(job_b(x3), x3 * 2)
    assert "System-Push-Input_1" in flow.default_session().plan.job_names
    flow.clear_default_session()
    np.testing.assert_array_equal(job_b(x3), x3 * 2)  # traced alone: its input is Input_0 now
    assert "System-Push-Input_1" not in flow.default_session().plan.job_names
