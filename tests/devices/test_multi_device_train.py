"""A data-parallel train job on several CPU devices (and machines) gives the one-device run's losses and weights.

OneFlow's claim for the consistent view: the logical program is the same whatever the placement, so the same
SGD-with-momentum steps on the same batches give the same numbers, up to the order of float additions (the
weight gradients are partial sums over the devices' batch slices, added by boxing): 1e-5 relative.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

BATCH, FEATURES, CLASSES, STEPS = 10, 12, 5, 5


def train(cpu_device_num: int, machines: int = 1, placement: str | list[str] | None = None):
    """The MLP of OneFlow's docs, trained STEPS steps; -> (losses, variables, session)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(cpu_device_num)
    if machines > 1:
        flow.env.machine([f"10.0.0.{i + 1}" for i in range(machines)])

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
                  labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", placement or "0:0"):
            hidden = flow.layers.dense(images, 16, activation=flow.nn.relu,
                                       kernel_initializer=flow.truncated_normal(0.1), name="hidden")
            logits = flow.layers.dense(hidden, CLASSES, kernel_initializer=flow.truncated_normal(0.1), name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    rng = np.random.default_rng(7)
    losses = []
    for _ in range(STEPS):
        x = rng.standard_normal((BATCH, FEATURES)).astype(np.float32)
        y = rng.integers(0, CLASSES, BATCH).astype(np.int32)
        losses.append(train_job(x, y))
    return np.array(losses), flow.get_all_variables(), flow.default_session()


@pytest.fixture(scope="module")
def one_device():
    losses, variables, _ = train(1)
    return losses, variables


@pytest.mark.parametrize(("devices", "placement"), [(2, "0:0-1"), (3, "0:0-2")])  # 10 rows over 3: 4, 3, 3
def test_data_parallel_training_equals_one_device(one_device, devices, placement):
    losses, variables, session = train(devices, placement=placement)
    np.testing.assert_allclose(losses, one_device[0], rtol=1e-5)
    assert variables.keys() == one_device[1].keys()
    for name, value in variables.items():
        np.testing.assert_allclose(value, one_device[1][name], rtol=1e-5, atol=1e-7, err_msg=name)
    plan = session.plan
    # every device holds the same weights: the reduced gradient reached each device's optimizer
    arrays = session.runtime.regsts
    for task in plan.tasks_of_op("train_job", "hidden-weight"):
        regst = task.produced_regst_desc["out"].regst_desc_id
        np.testing.assert_array_equal(arrays[regst][0].blobs["hidden-weight/out"], variables["hidden-weight"])
    assert len(plan.tasks_of_op("train_job", "hidden-weight")) == devices


def test_two_machines_train_like_one_device_through_copy_comm_net(one_device):
    losses, variables, session = train(2, machines=2, placement=["0:0-1", "1:0-1"])
    np.testing.assert_allclose(losses, one_device[0], rtol=1e-5)
    for name, value in variables.items():
        np.testing.assert_allclose(value, one_device[1][name], rtol=1e-5, atol=1e-7, err_msg=name)
    plan = session.plan
    weights = plan.tasks_of_op("train_job", "hidden-weight")
    assert [(t.machine_id, t.parallel_id) for t in weights] == [(0, 0), (0, 1), (1, 2), (1, 3)]
    comm = [t for t in plan.tasks if t.task_type == "CopyCommNet"]
    assert comm and all(t.is_boxing and t.thrd_id == 2 for t in comm)  # CommNet thread: after 2 CPU threads
    regsts = plan.regst_descs
    by_id = {t.task_id: t for t in plan.tasks}
    for t in comm:  # on the receiving machine, reading a register produced on the other one
        (src,) = t.consumed_ids
        assert by_id[regsts[src].producer_task_id].machine_id != t.machine_id
    # push, pull and main stay on machine 0 (foreign I/O buffers exist only on the master)
    for job in ("System-Main",):
        assert {t.machine_id for t in plan.tasks_of_job(job)} == {0}
    assert {t.machine_id for t in plan.tasks if t.task_type in ("ForeignInput", "ForeignOutput")} == {0}
    assert plan.peer_machine_ids == {0: (1,), 1: (0,)}
    assert session.runtime.transport.messages > 0


def test_mirrored_training_on_halves_equals_one_device_on_the_whole_batch(one_device):
    """The docs' mirrored_strategy.py: each device gets its half of the batch as a ListNumpy piece, the loss comes
    back as one array per device, and training is one-device SGD on the concatenated batch (§5)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())
    half = BATCH // 2

    @flow.global_function(type="train", function_config=config)
    def train_job(images: tp.ListNumpy.Placeholder((half, FEATURES)),
                  labels: tp.ListNumpy.Placeholder((half,), dtype=flow.int32)) -> tp.ListNumpy:
        hidden = flow.layers.dense(images, 16, activation=flow.nn.relu,
                                   kernel_initializer=flow.truncated_normal(0.1), name="hidden")
        logits = flow.layers.dense(hidden, CLASSES, kernel_initializer=flow.truncated_normal(0.1), name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    rng = np.random.default_rng(7)
    losses = []
    for _ in range(STEPS):
        x = rng.standard_normal((BATCH, FEATURES)).astype(np.float32)
        y = rng.integers(0, CLASSES, BATCH).astype(np.int32)
        pieces = train_job([x[:half], x[half:]], [y[:half], y[half:]])
        assert isinstance(pieces, list) and [p.shape for p in pieces] == [(half,), (half,)]
        losses.append(np.concatenate(pieces))
    np.testing.assert_allclose(np.array(losses), one_device[0], rtol=1e-5)
    for name, value in flow.get_all_variables().items():
        np.testing.assert_allclose(value, one_device[1][name], rtol=1e-5, atol=1e-7, err_msg=name)


def _conv_net(devices: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A small LeNet (conv, relu, max pool, dense; no dropout, so it is exactly comparable) over every device."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((6, 1, 8, 8)),
                  labels: tp.Numpy.Placeholder((6,), dtype=flow.int32)) -> tp.Numpy:
        init = flow.truncated_normal(0.1)
        conv = flow.layers.conv2d(images, 4, 3, padding="SAME", activation=flow.nn.relu, kernel_initializer=init,
                                  name="conv1")
        pool = flow.nn.max_pool2d(conv, ksize=2, strides=2, padding="SAME", name="pool1")
        logits = flow.layers.dense(flow.reshape(pool, [pool.shape[0], -1]), 5, kernel_initializer=init, name="out")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    rng = np.random.default_rng(1)
    losses = [train_job(rng.standard_normal((6, 1, 8, 8)).astype(np.float32), rng.integers(0, 5, 6).astype(np.int32))
              for _ in range(3)]
    return np.array(losses), flow.get_all_variables()


def test_a_conv_net_trains_data_parallel_like_one_device():
    want_losses, want_vars = _conv_net(1)
    for devices in (2, 3):  # 6 images: 3 + 3, and 2 + 2 + 2
        losses, variables = _conv_net(devices)
        np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
        for name, value in want_vars.items():
            np.testing.assert_allclose(variables[name], value, rtol=1e-5, atol=1e-6, err_msg=f"{name} on {devices}")
