"""OneFlow's SGDW (optimizer.py, v0.3.4): the API's way to a weight decay on sgd_update (momentum 0) and
momentum_update. Several steps of a train job against NumPy float64 transcriptions of SGDUpdateFunctor and
MomentumUpdateFunctor (the decay is not in the momentum), with weight_decay_excludes sparing the bias."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

LR, WD, STEPS = 0.1, 0.5, 3
W0 = np.array([1.0, -2.0, 3.0], np.float32)
B0 = np.array([0.5, 0.25, -1.0], np.float32)
X = np.array([0.5, -1.0, 2.0], np.float32)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgdw_decays_the_weight_beside_the_momentum(momentum: float) -> None:
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,), initializer=flow.zeros_initializer())
        b = flow.get_variable("bias", shape=(3,), initializer=flow.zeros_initializer())
        loss = flow.math.reduce_sum(w * x + b)  # dw = x, db = 1 on every step
        flow.optimizer.SGDW(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=momentum,
                            weight_decay=WD, weight_decay_excludes="bias").minimize(loss)
        return loss

    flow.load_variables({"w": W0, "bias": B0})
    w, b = W0.astype(np.float64), B0.astype(np.float64)
    vw, vb = np.zeros(3), np.zeros(3)
    lr = float(np.float32(LR))
    for _ in range(STEPS):
        train(X)
        gw, gb = X.astype(np.float64), np.ones(3)
        if momentum:  # MomentumUpdateFunctor: v = beta v - lr g; w = w + v - lr wd w
            vw, vb = momentum * vw - lr * gw, momentum * vb - lr * gb
            w, b = w + vw - lr * WD * w, b + vb
        else:  # SGDUpdateFunctor: w -= lr (g + wd w)
            w, b = w - lr * (gw + WD * w), b - lr * gb
    got = flow.get_all_variables()
    np.testing.assert_allclose(got["w"], w, rtol=1e-5)
    np.testing.assert_allclose(got["bias"], b, rtol=1e-5)
