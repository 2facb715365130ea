"""``flow.advanced.distribute_split/clone/concat/add``: OneFlow's distribute ops, a consistent blob to one blob per
device of the current placement (each on its device alone) and back, with OneFlow's SBP signatures, gradients
(split <-> concat, clone <-> add, ``<op>_grad``) and one copy task per device in the Plan."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError


def _on(device: int):
    return flow.scope.placement("cpu", f"0:{device}")


@pytest.mark.parametrize("devices", [1, 2, 3])
def test_split_then_concat_per_device_ops_as_distribute_map(devices):
    """OneFlow's distribute_map: split, one op under each device's placement, concat; vs NumPy on the slices."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    rows = 7

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((rows, 3))) -> tp.Numpy:
        pieces = flow.advanced.distribute_split(x)
        assert len(pieces) == devices
        outs = []
        for i, piece in enumerate(pieces):
            with _on(i):
                outs.append(flow.math.square(piece) + float(i))
        return flow.advanced.distribute_concat(outs)

    x = np.random.default_rng(0).standard_normal((rows, 3)).astype(np.float32)
    got = job(x)
    want = np.concatenate([p * p + i for i, p in enumerate(np.array_split(x, devices))])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    user = flow.default_session().job_set.job("job")
    split_op, concat_op = user.op("DistributeSplit_0"), user.op("DistributeConcat_0")
    assert split_op.op_type == "distribute_split" and len(split_op.output_lbns) == devices
    assert [user.blob_descs[lbn].shape for lbn in split_op.output_lbns] == [
        p.shape for p in np.array_split(x, devices)]
    if devices > 1:
        assert str(user.sbp_signatures[split_op.name]).startswith("{in: S(0), out_0: B")
        assert str(user.sbp_signatures[concat_op.name]).endswith("out: S(0)}")
        plan = flow.default_session().plan
        tasks = plan.tasks_of_op("job", split_op.name)
        assert len(tasks) == devices and {t.task_type for t in tasks} == {"DistributeSplit"}  # kDistributeSplit
        for i, t in enumerate(tasks):  # each device's task makes its own piece
            assert t.exec_sequence[0].output_lbns == (split_op.output_lbns[i],)


@pytest.mark.parametrize("devices", [2, 3])
def test_clone_then_add_sums_each_devices_result(devices):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((6, 3))) -> tp.Numpy:
        outs = []
        for i, copy in enumerate(flow.advanced.distribute_clone(x)):
            with _on(i):
                outs.append(copy * float(i + 1))
        return flow.advanced.distribute_add(outs)

    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    np.testing.assert_allclose(job(x), x * sum(range(1, devices + 1)), rtol=1e-6)
    user = flow.default_session().job_set.job("job")
    assert str(user.sbp_signatures["DistributeClone_0"]).startswith("{in: B, out_0: B")
    assert str(user.sbp_signatures["DistributeAdd_0"]) == "{" + ", ".join(
        [f"in_{i}: P" for i in range(devices)] + ["out: P"]) + "}"


@pytest.mark.parametrize("devices", [2, 3])
def test_gradients_through_split_concat_and_clone_add(devices):
    """loss = sum_i c_i * sum(square(split_i(w)))  + sum(add_i(clone_i(v) * d_i)): NumPy gradients, SGD lr 1."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    rows = 5

    @flow.global_function(type="train")
    def train() -> tp.Numpy:
        w = flow.get_variable("w", shape=(rows, 2), initializer=flow.constant_initializer(1.0))
        v = flow.get_variable("v", shape=(2,), initializer=flow.constant_initializer(2.0))
        outs = []
        for i, piece in enumerate(flow.advanced.distribute_split(w)):
            with _on(i):
                outs.append(flow.math.square(piece) * float(i + 1))
        squares = flow.advanced.distribute_concat(outs)
        scaled = []
        for i, copy in enumerate(flow.advanced.distribute_clone(v)):
            with _on(i):
                scaled.append(copy * float(i + 1))
        total = flow.advanced.distribute_add(scaled)
        loss = flow.math.reduce_sum(squares) + flow.math.reduce_sum(total)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
        return loss

    loss = train()
    c = np.concatenate([np.full(len(p), i + 1.0) for i, p in enumerate(np.array_split(np.arange(rows), devices))])
    k = sum(range(1, devices + 1))
    np.testing.assert_allclose(loss, (c[:, None] * np.ones((rows, 2))).sum() + 2.0 * 2 * k, rtol=1e-6)
    got = flow.get_all_variables()
    np.testing.assert_allclose(got["w"], 1.0 - 2.0 * c[:, None] * np.ones((rows, 2)), rtol=1e-6)
    np.testing.assert_allclose(got["v"], 2.0 - k * np.ones(2), rtol=1e-6)
    user = flow.default_session().job_set.job("train")
    assert user.op("DistributeSplit_0_grad").op_type == "distribute_concat"
    assert user.op("DistributeConcat_0_grad").op_type == "distribute_split"
    assert user.op("DistributeClone_0_grad").op_type == "distribute_add"
    assert user.op("DistributeAdd_0_grad").op_type == "distribute_clone"


@pytest.mark.parametrize("devices", [2, 3])
def test_split_outputs_go_straight_to_concat_and_to_an_op_on_the_whole_placement(devices):
    """Each out_i lies on device i alone: concat reads it there; an op on the whole placement gets it by boxing."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((6, 2))) -> tuple[tp.Numpy, tp.Numpy]:
        pieces = flow.advanced.distribute_split(x, axis=-1 if devices == 2 else 0)
        return flow.advanced.distribute_concat(pieces, axis=-1 if devices == 2 else 0), pieces[-1] * 2.0

    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    whole, last = job(x)
    np.testing.assert_array_equal(whole, x)
    np.testing.assert_array_equal(last, np.array_split(x, devices, axis=1 if devices == 2 else 0)[-1] * 2.0)


def test_a_list_of_the_wrong_length_is_an_error_at_the_users_line():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        a, _b = flow.advanced.distribute_split(x)
        return flow.advanced.distribute_concat([a])

    with pytest.raises(OpInferError, match=r"test_distribute_ops.py:\d+: flow.advanced.distribute_concat takes one "
                                           r"blob per device of the placement cpu:0:0-1 \(2\); got a list of 1"):
        job(np.zeros((4, 3), np.float32))


def test_a_blob_made_on_another_device_is_copied_to_its_slot():
    """OneFlow reads blob i of distribute_concat/add on device i (DistributeConcatOp's parallel signature) and boxes
    a blob made elsewhere there; flowlab refused it before (an OpInferError at the user's line)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def swapped(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        a, b = flow.advanced.distribute_split(x)
        return flow.advanced.distribute_concat([b, a])  # blob 0 lies on device 1, blob 1 on device 0

    @flow.global_function()
    def added(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:1"):
            y = flow.math.square(x)  # made on device 1 alone
        with flow.scope.placement("cpu", "0:0"):
            z = flow.math.negative(x)  # on device 0 alone
        with flow.scope.placement("cpu", "0:0-1"):
            return flow.advanced.distribute_add([y, z])  # each to the other device

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(swapped(x), np.concatenate([x[2:], x[:2]]))
    np.testing.assert_array_equal(added(x), x * x - x)
    user = flow.default_session().job_set.job("swapped")
    copies = [op for op in user.ops if op.op_type == "identity"]
    assert [str(op.parallel_conf) for op in copies] == ["cpu:0:0", "cpu:0:1"]


def test_a_blob_on_several_devices_is_an_error_at_the_users_line():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        a, _b = flow.advanced.distribute_split(x)
        return flow.advanced.distribute_add([x, a])  # x is consistent on both devices

    with pytest.raises(OpInferError, match=r"test_distribute_ops.py:\d+: flow.advanced.distribute_add: blob 0 "
                                           r"\('Input_0/out'\) must lie on one device.*; it lies on cpu:0:0-1$"):
        job(np.zeros((4, 3), np.float32))


def test_uneven_concat_pieces_and_a_too_short_split_are_errors():
    flow.clear_default_session()
    flow.config.cpu_device_num(3)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        flow.advanced.distribute_split(x)
        return x

    with pytest.raises(OpInferError, match="has 2 rows on axis 0; each of the 3 devices needs at least one"):
        job(np.zeros((2, 3), np.float32))
