"""layers.batch_normalization: batch statistics and in-place moving averages in train jobs, moving statistics
in predict jobs, gradients against finite differences; both kernel implementations."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from tests.helpers.gradients import check, v

from .helpers import run_op

RNG = np.random.default_rng(21)


@pytest.mark.parametrize("impl", ["reference", "numba"])
@pytest.mark.parametrize("training", [True, False])
def test_kernels(impl, training):
    x = RNG.standard_normal((4, 3, 5)).astype(np.float32) * 2 + 1
    mm, mv = np.array([0.5, -1, 0], np.float32), np.array([2, 1, 0.5], np.float32)
    gamma, beta = np.array([1, 2, 0.5], np.float32), np.array([0, 1, -1], np.float32)
    ins = {"x": [x], "moving_mean": [mm.copy()], "moving_variance": [mv.copy()], "gamma": [gamma], "beta": [beta]}
    y, mean, inv = run_op("normalization", ins, {"axis": 1, "training": training, "momentum": 0.9}, impl)
    m, var = (x.mean(axis=(0, 2)), x.var(axis=(0, 2))) if training else (mm, mv)
    want = (x - m[None, :, None]) / np.sqrt(var[None, :, None] + 1e-3) * gamma[None, :, None] + beta[None, :, None]
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    if training:  # the moving statistics were updated in place
        np.testing.assert_allclose(ins["moving_mean"][0], 0.9 * mm + 0.1 * m, rtol=1e-5)
        # the moving variance takes the unbiased variance (cuDNN's, which OneFlow v0.3.4's kernel calls)
        np.testing.assert_allclose(ins["moving_variance"][0], 0.9 * mv + 0.1 * x.var(axis=(0, 2), ddof=1),
                                   rtol=1e-5)
    dy = RNG.standard_normal(x.shape).astype(np.float32)
    dx, dg, db = run_op("normalization_grad", {"x": [x], "dy": [dy], "mean": [mean], "inv_variance": [inv],
                                               "gamma": [gamma]}, {"axis": 1}, impl)
    np.testing.assert_allclose(db, dy.sum(axis=(0, 2)), rtol=1e-4)


def test_gradients_by_finite_differences():
    x = v(4, 3, 2, 2)

    def build(b, f):
        return flow.layers.batch_normalization(b["x"], axis=1, name="bn")

    def forward(s, f):
        a = s["x"]
        m, var = a.mean(axis=(0, 2, 3), keepdims=True), a.var(axis=(0, 2, 3), keepdims=True)
        return (a - m) / np.sqrt(var + 1e-3)

    check({"x": x}, build, forward, {}, (4, 3, 2, 2), rtol=1e-5, atol=1e-7)


def test_train_updates_moving_stats_and_predict_uses_them():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((8, 2))) -> tp.Numpy:
        y = flow.layers.batch_normalization(x, axis=1, momentum=0.5, name="bn")
        loss = flow.math.reduce_sum(y * y)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return y

    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((8, 2))) -> tp.Numpy:
        return flow.layers.batch_normalization(x, axis=1, momentum=0.5, name="bn")

    x = RNG.standard_normal((8, 2)).astype(np.float32) * 3 + 2
    train(x)
    stats = flow.get_all_variables()
    np.testing.assert_allclose(stats["bn-moving_mean"], 0.5 * 0 + 0.5 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(stats["bn-moving_variance"], 0.5 * 1 + 0.5 * x.var(0, ddof=1), rtol=1e-5)
    expected = (x - stats["bn-moving_mean"]) / np.sqrt(stats["bn-moving_variance"] + 1e-3)
    np.testing.assert_allclose(predict(x), expected, rtol=1e-5, atol=1e-6)
    assert sorted(k for k in stats if k.startswith("bn-")) == ["bn-beta", "bn-gamma", "bn-moving_mean",
                                                               "bn-moving_variance"]
