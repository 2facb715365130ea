"""Cross entropies are computed as log-sum-exp with the row maximum subtracted, so finite logits give a finite
loss however large (issue 9, defect 7)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

from .helpers import run_op

IMPLS = ["reference", "numba"]


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_xent_of_far_apart_logits_is_finite(impl, dtype):
    logits = np.array([[1000, 0, -1000], [1000, 0, -1000], [-1000, 0, 1000], [0.5, 0.25, 0]], dtype)
    labels = np.array([1, 2, 2, 0], np.int32)
    prob, loss = run_op("sparse_softmax_cross_entropy", {"prediction": [logits], "label": [labels]}, {}, impl)
    np.testing.assert_allclose(loss, [1000, 2000, 0, -log_softmax(logits)[3, 0]], rtol=1e-6)
    np.testing.assert_allclose(prob, np.exp(log_softmax(logits)), rtol=1e-6, atol=1e-30)
    (dx,) = run_op("sparse_softmax_cross_entropy_grad", {"prob": [prob], "label": [labels],
                                                         "dy": [np.ones(4, dtype)]}, {}, impl)
    np.testing.assert_allclose(dx, np.exp(log_softmax(logits)) - np.eye(3)[labels], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("impl", IMPLS)
def test_dense_xent_of_far_apart_logits_is_finite(impl):
    logits = np.array([[1000, 0, -1000], [3, 2, 1]], np.float32)
    labels = np.array([[0, 1, 0], [0.5, 0, 0.5]], np.float32)  # a zero label times log(0) is 0, not NaN
    _prob, loss = run_op("softmax_cross_entropy", {"prediction": [logits], "label": [labels]}, {}, impl)
    np.testing.assert_allclose(loss, -(labels * log_softmax(logits)).sum(-1), rtol=1e-6)
    assert loss[0] == pytest.approx(1000)


@pytest.mark.parametrize("impl", IMPLS)
def test_sigmoid_xent_of_large_logits_is_finite(impl):
    x = np.array([1000, -1000, 80, -80, 0], np.float32)
    z = np.array([0, 1, 0, 1, 1], np.float32)
    (loss,) = run_op("sigmoid_cross_entropy", {"prediction": [x], "label": [z]}, {}, impl)
    np.testing.assert_allclose(loss, [1000, 1000, 80, 80, np.log(2)], rtol=1e-6)


def test_training_with_large_logits_reports_a_finite_loss(kernel_impl):
    @flow.global_function(type="train")
    def big_Job(x: tp.Numpy.Placeholder((4, 3)), labels: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3, 3), initializer=flow.constant_initializer(0.0))
        logits = flow.math.add(x, flow.matmul(x, w))
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-6]), momentum=0).minimize(loss)
        return loss

    x = np.array([[1000, 0, -1000], [0, 500, 0], [-300, 0, 300], [1, 2, 3]], np.float32)
    labels = np.array([1, 0, 0, 2], np.int32)
    loss = big_Job(x, labels)
    np.testing.assert_allclose(loss, -log_softmax(x)[np.arange(4), labels], rtol=1e-5)
    assert np.isfinite(loss).all()
    w = flow.get_all_variables()["w"]
    assert np.isfinite(w).all()
