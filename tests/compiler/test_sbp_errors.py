"""Bad placements and hints: each a clear error naming what was expected, what was given, and the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler.sbp_infer import SbpInferError
from flowlab.errors import OpInferError, PlacementError
from flowlab.ops.registry import OpDef, get_op_def, register_op, registered_op_types


def test_split_axis_shorter_than_the_device_count():
    flow.config.cpu_device_num(4)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3, 5))) -> tp.Numpy:  # 3 rows on 4 devices
        return flow.math.relu(x)

    with pytest.raises(SbpInferError) as err:
        job(np.zeros((3, 5), np.float32))
    text = str(err.value)
    assert "test_sbp_errors.py:" in text and "'Input_0' (input) on cpu:0:0-3" in text
    assert "blob 'out' of shape (3, 5) cannot be split on axis 0 over 4 devices (it has 3 rows there" in text


def test_a_hint_splitting_a_short_axis_names_the_blob_and_the_users_line():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 1))) -> tp.Numpy:
        return flow.identity(x.with_distribute(flow.distribute.split(1)))

    with pytest.raises(SbpInferError) as err:
        job(np.zeros((4, 1), np.float32))
    text = str(err.value)
    assert "op 'identity_0' (identity) on cpu:0:0-1" in text and "test_sbp_errors.py:" in text, text
    assert "blob 'in_0' of shape (4, 1) cannot be split on axis 1 over 2 devices" in text


def test_incompatible_hints_name_the_op_the_hints_and_the_line():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((4, 6)), b: tp.Numpy.Placeholder((6, 2))) -> tp.Numpy:
        split0 = flow.distribute.split(0)
        return flow.matmul(a.with_distribute(split0), b.with_distribute(split0))  # [S(m), S(k)]: no such matmul

    with pytest.raises(SbpInferError) as err:
        job(np.zeros((4, 6), np.float32), np.zeros((6, 2), np.float32))
    text = str(err.value)
    assert "test_sbp_errors.py:" in text and "op 'matmul_0' (matmul) on cpu:0:0-1" in text
    assert "the SBP hints {a_0: S(0), b_0: S(0)} are incompatible" in text
    assert "{a_0: S(1), b_0: S(0), out_0: P}" in text  # the signatures it has are listed


def test_bad_hints_at_the_line_that_gives_them():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        return x.with_distribute(flow.distribute.split(2))

    with pytest.raises(OpInferError, match=r"test_sbp_errors.py:\d+: Input_0/out.with_distribute: split axis 2 is "
                                           r"out of range for a blob of shape \(4, 6\)"):
        job(np.zeros((4, 6), np.float32))


def test_dense_model_distribute_takes_auto_broadcast_or_split0():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        return flow.layers.dense(x, 3, model_distribute=flow.distribute.split(1))

    with pytest.raises(ValueError, match=r"test_sbp_errors.py:\d+: dense's model_distribute must be"):
        job(np.zeros((4, 6), np.float32))


@pytest.mark.parametrize("ids, words", [
    ("0:0-2", "names cpu device 2, but flow.config.cpu_device_num is 2 (device ids 0-1)"),
    (["0:0-1", "2:0"], "names machine 2, but flow.env.machine names 2 machine(s) (ids 0-1)"),
    ("0:1-x", "malformed machine_device_ids entry '0:1-x'"),
    (["0:0-1", "0:1"], "names device 0:1 twice"),
])
def test_bad_placements_at_the_users_line(ids, words):
    flow.config.cpu_device_num(2)
    flow.env.machine(["192.168.1.12", "192.168.1.11"])
    with pytest.raises(PlacementError) as err:
        flow.scope.placement("cpu", ids)
    assert words in str(err.value) and str(err.value).startswith("test_sbp_errors.py:")


def test_several_machines_and_their_default_placement():
    flow.config.cpu_device_num(2)
    flow.env.machine([{"addr": "192.168.1.12"}, {"addr": "192.168.1.11"}])
    flow.env.ctrl_port(9988)
    assert str(flow.scope.placement("cpu", ["0:0-1", "1:0-1"]).parallel_conf) == "cpu:0:0-1,1:0-1"
    assert flow.scope.placement("cpu", ["0:0-1", "1:0-1"]).parallel_conf.parallel_num == 4

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        return flow.math.relu(x)

    x = np.arange(24, dtype=np.float32).reshape(4, 6) - 12
    np.testing.assert_array_equal(job(x), np.maximum(x, 0))  # one row on each of the 4 devices
    user = flow.default_session().job_set.job("job")
    assert str(user.op("relu_0").parallel_conf) == "cpu:0:0-1,1:0-1"  # every device of every machine
    with pytest.raises(ValueError, match="must be distinct"):
        flow.env.machine(["a", "a"])


def test_every_registered_op_type_declares_an_sbp_rule():
    assert all(get_op_def(t).sbp is not None for t in registered_op_types())
    with pytest.raises(ValueError, match="op type 'no_rule' declares no SBP rule"):
        register_op(OpDef("no_rule", (), ("out",), lambda ctx: {}, system=True))


def test_the_job_verifier_checks_recorded_signatures_against_the_ops():
    from flowlab.compiler import JobVerifyError, check_job
    from flowlab.ir import SbpSignature, split

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        return flow.math.relu(x)

    job(np.zeros((4, 6), np.float32))
    good = flow.default_session().job_set.job("job")
    check_job(good)
    stale = good.replace(sbp_signatures={**good.sbp_signatures, "gone": SbpSignature({"x_0": split(0)})})
    with pytest.raises(JobVerifyError, match="sbp_signatures has a signature for 'gone', which is not an op of"):
        check_job(stale, "after pass 'X'")
    wrong = good.replace(sbp_signatures={**good.sbp_signatures, "relu_0": SbpSignature({"x_0": split(0)})})
    with pytest.raises(JobVerifyError, match=r"op 'relu_0' \(relu.*: its SBP signature names blobs \['x_0'\]; "
                                             r"the op has \['x_0', 'y_0'\]"):
        check_job(wrong)
    with pytest.raises(JobVerifyError, match="mirrored_op_names names 'nope'"):
        check_job(good.replace(mirrored_op_names=("nope",)))


def test_jobs_sharing_a_variable_must_agree_on_its_sbp():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job_a(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        return x + flow.get_variable("w", shape=(4, 6), distribute=flow.distribute.split(1))

    @flow.global_function()
    def job_b(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        return x * flow.get_variable("w", shape=(4, 6))

    with pytest.raises(SbpInferError, match=r"test_sbp_errors.py:\d+: interface blob 'w' lies S\(1\) in job 'job_a' "
                                            r"but B in job 'job_b'; jobs share it per device"):
        job_a(np.zeros((4, 6), np.float32))
