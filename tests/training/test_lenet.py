"""The issue's LeNet: conv2d SAME + relu, max_pool2d, dense, dropout in train only; trained with SGD on the
digits, then evaluated by a predict job after a checkpoint round trip through a new session."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp

B = 32


def lenet(data, train=False):
    initializer = flow.truncated_normal(0.1)
    conv1 = flow.layers.conv2d(data, 8, 3, padding="SAME", activation=flow.nn.relu, name="conv1",
                               kernel_initializer=initializer)
    pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1", data_format="NCHW")
    conv2 = flow.layers.conv2d(pool1, 16, 3, padding="SAME", activation=flow.nn.relu, name="conv2",
                               kernel_initializer=initializer)
    pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2", data_format="NCHW")
    reshape = flow.reshape(pool2, [pool2.shape[0], -1])
    hidden = flow.layers.dense(reshape, 64, activation=flow.nn.relu, kernel_initializer=initializer, name="dense1")
    if train:
        hidden = flow.nn.dropout(hidden, rate=0.5)
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="dense2")


def define_jobs():
    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((B, 1, 8, 8)),
                  labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        logits = lenet(images, train=True)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.05]), momentum=0.9).minimize(loss)
        return loss

    @flow.global_function()
    def eval_job(images: tp.Numpy.Placeholder((B, 1, 8, 8))) -> tp.Numpy:
        return lenet(images)

    return train_job, eval_job


def test_lenet_trains_and_its_checkpoint_round_trips(tmp_path):
    (train_x, train_y), (test_x, test_y) = flow.data.load_digits(batch_size=B)
    train_job, eval_job = define_jobs()
    losses = []
    for _epoch in range(3):
        for x, y in zip(train_x, train_y):
            losses.append(float(train_job(x, y).mean()))
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])
    names = sorted(flow.get_all_variables())
    assert "conv1-weight" in names and flow.get_all_variables()["conv1-weight"].shape == (8, 1, 3, 3)
    before = [eval_job(x) for x in test_x]
    accuracy = np.mean([np.mean(p.argmax(1) == y) for p, y in zip(before, test_y)])
    assert accuracy > 0.8, accuracy
    flow.checkpoint.save(tmp_path / "lenet")

    flow.clear_default_session()
    _, eval_job = define_jobs()
    flow.train.CheckPoint().load(tmp_path / "lenet")
    after = [eval_job(x) for x in test_x]
    # the new session's first call runs the reference kernels (the tiered default, kernels/tiered.py), the calls
    # after it Numba's, as every call of ``before`` did: within the kernel modes' tolerance, then bit for bit
    np.testing.assert_allclose(after[0], before[0], rtol=2e-4, atol=1e-5)
    for a, b in zip(before[1:], after[1:], strict=True):
        np.testing.assert_array_equal(a, b)
