"""OneFlow's consistent_strategy.py (docs extended_topics, oneflow-distributed.md §5) on two CPU devices.

The docs' LeNet (conv 32/64 5x5 SAME + relu, max pool 2/2, dense 512 relu, dropout 0.5 in training, dense 10)
trains in the consistent view: each call takes and returns the whole batch. Dropout draws its masks per device,
so training is not comparable number for number with one device (tests/devices/test_multi_device_train.py compares a
dropout-free LeNet); what the consistent view promises is checked instead: the whole-batch loss comes back, the
variables read back whole, and the eval job on two devices gives the one-device logits of the same weights.
"""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp

BATCH = 8  # the docs use 100; the program is the same


def lenet(data, train: bool = False):
    initializer = flow.truncated_normal(0.1)
    conv1 = flow.layers.conv2d(data, 32, 5, padding="SAME", activation=flow.nn.relu, name="conv1",
                               kernel_initializer=initializer)
    pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1", data_format="NCHW")
    conv2 = flow.layers.conv2d(pool1, 64, 5, padding="SAME", activation=flow.nn.relu, name="conv2",
                               kernel_initializer=initializer)
    pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2", data_format="NCHW")
    reshape = flow.reshape(pool2, [pool2.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=initializer, name="dense1")
    if train:
        hidden = flow.nn.dropout(hidden, rate=0.5, name="dropout")
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="dense2")


def define_jobs():
    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float),
                  labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        logits = lenet(images, train=True)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        lr_scheduler = flow.optimizer.PiecewiseConstantScheduler([], [0.1])
        flow.optimizer.SGD(lr_scheduler, momentum=0).minimize(loss)
        return loss

    @flow.global_function()
    def eval_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float)) -> tp.Numpy:
        return lenet(images, train=False)

    return train_job, eval_job


def test_consistent_strategy_lenet_on_two_devices():
    rng = np.random.default_rng(4)
    images = rng.uniform(0, 1, (3, BATCH, 1, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, (3, BATCH)).astype(np.int32)

    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    train_job, eval_job = define_jobs()
    for step in range(2):
        loss = train_job(images[step], labels[step])
        assert loss.shape == (BATCH,) and np.isfinite(loss).all()  # the whole batch, not one device's half
    plan = flow.default_session().plan
    assert len(plan.tasks_of_op("train_job", "conv1")) == 2  # the conv op, one task per device
    logits = eval_job(images[2])
    assert logits.shape == (BATCH, 10)
    weights = {k: v for k, v in flow.get_all_variables().items() if not k.startswith("System-")}
    assert weights["dense1-weight"].shape == (512, 7 * 7 * 64)  # read back whole

    flow.clear_default_session()
    _train_job, eval_job = define_jobs()
    flow.load_variables(weights)
    # one device's conv2 sees the whole batch, each of two devices half of it: the conv autotune (measured per
    # shape, FLOWLAB_WINOGRAD=auto) may pick Winograd for one and im2col for the other, which round differently.
    # Their float32 sums differ by a few ulps of the largest terms, so the tolerance scales with the logits' size
    # (max |logit| ~150 here: atol 1.5e-4; a device's wrong half or a lost weight moves logits by O(1)).
    one_device = eval_job(images[2])
    np.testing.assert_allclose(logits, one_device, rtol=1e-5, atol=1e-6 * np.abs(one_device).max())
