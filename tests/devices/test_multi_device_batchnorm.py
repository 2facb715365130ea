"""Training-mode batch normalization on several devices normalizes each device's slice of the batch with that
slice's own statistics, as OneFlow v0.3.4's ``normalization`` op does (user/ops/normalization_op.cpp: x and y
S(0), every other blob B; normalization_grad: x, dy, dx S(0), gamma_diff and beta_diff P).

So the 2-device run is *not* the one-device run: it equals a NumPy reference of the same per-device semantics:
each device's mean and variance over its rows, gamma/beta gradients summed over devices (P -> B boxing), and each
device's copy of the moving statistics updated with its own batch statistics (the copies diverge; a variable read
gets device 0's copy, the nearest source of OneFlow's B -> 1 boxing).
"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.ir.sbp import BROADCAST, PARTIAL_SUM, split

BATCH, FEATURES, UNITS, STEPS, LR, MOMENTUM, EPS = 8, 5, 4, 3, 0.1, 0.9, 1e-3


def _train(devices: int):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    init = np.random.default_rng(3).standard_normal((UNITS, FEATURES)).astype(np.float32) * 0.5

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((BATCH, FEATURES)), t: tp.Numpy.Placeholder((BATCH, UNITS))
                  ) -> tp.Numpy:
        w = flow.get_variable("w", shape=(UNITS, FEATURES), initializer=flow.zeros_initializer())
        h = flow.matmul(x, w, transpose_b=True)
        y = flow.layers.batch_normalization(h, axis=1, momentum=MOMENTUM, epsilon=EPS, name="bn")
        loss = flow.math.reduce_mean(flow.math.square(y - t))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=0).minimize(loss)
        return loss

    flow.load_variables({"w": init})
    rng = np.random.default_rng(5)
    data = [(rng.standard_normal((BATCH, FEATURES)).astype(np.float32),
             rng.standard_normal((BATCH, UNITS)).astype(np.float32)) for _ in range(STEPS)]
    losses = [float(np.asarray(train_job(x, t)).reshape(())) for x, t in data]
    return init, data, losses, flow.get_all_variables(), flow.default_session()


def _reference(init: np.ndarray, data: list, devices: int) -> tuple[list[float], dict, list[np.ndarray]]:
    """NumPy, float64: per-device statistics; gradients of the logical loss summed over devices."""
    w, gamma, beta = init.astype(np.float64), np.ones(UNITS), np.zeros(UNITS)
    moving = [(np.zeros(UNITS), np.ones(UNITS)) for _ in range(devices)]
    losses = []
    for x, t in data:
        bounds = np.cumsum([0] + [len(p) for p in np.array_split(np.arange(BATCH), devices)])
        ys, caches = [], []
        for d in range(devices):
            xd = x[bounds[d]:bounds[d + 1]].astype(np.float64)
            hd = xd @ w.T
            mean, var = hd.mean(0), hd.var(0)
            moving[d] = (MOMENTUM * moving[d][0] + (1 - MOMENTUM) * mean,
                         MOMENTUM * moving[d][1] + (1 - MOMENTUM) * hd.var(0, ddof=1))  # unbiased, as cuDNN
            inv = 1 / np.sqrt(var + EPS)
            xhat = (hd - mean) * inv
            ys.append(gamma * xhat + beta)
            caches.append((xd, xhat, inv))
        y = np.concatenate(ys)
        losses.append(float(np.mean((y - t) ** 2)))
        dy = 2 * (y - t) / y.size
        dgamma, dbeta, dw = np.zeros(UNITS), np.zeros(UNITS), np.zeros_like(w)
        for d, (xd, xhat, inv) in enumerate(caches):
            dyd = dy[bounds[d]:bounds[d + 1]]
            n = len(dyd)
            dgamma += (dyd * xhat).sum(0)
            dbeta += dyd.sum(0)
            dh = gamma * inv / n * (n * dyd - dyd.sum(0) - xhat * (dyd * xhat).sum(0))
            dw += dh.T @ xd
        w, gamma, beta = w - LR * dw, gamma - LR * dgamma, beta - LR * dbeta
    return losses, {"w": w, "bn-gamma": gamma, "bn-beta": beta}, [m for pair in moving for m in pair]


@pytest.mark.parametrize("devices", [1, 2])
def test_training_batch_norm_normalizes_each_devices_slice_alone(devices):
    init, data, losses, variables, session = _train(devices)
    ref_losses, ref_vars, moving = _reference(init, data, devices)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for name, value in ref_vars.items():
        np.testing.assert_allclose(variables[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    # a variable read gives device 0's moving statistics ...
    np.testing.assert_allclose(variables["bn-moving_mean"], moving[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(variables["bn-moving_variance"], moving[1], rtol=1e-5, atol=1e-6)
    # ... and every device holds its own
    regsts = session.runtime.regsts
    for d, task in enumerate(session.plan.tasks_of_op("train_job", "bn-moving_mean")):
        blob = regsts[task.produced_regst_desc["out"].regst_desc_id][0].blobs["bn-moving_mean/out"]
        np.testing.assert_allclose(blob, moving[2 * d], rtol=1e-5, atol=1e-6, err_msg=f"device {d}")
    if devices == 2:
        sbp = session.job_set.job("train_job").sbp_signatures
        assert sbp["bn"]["x_0"] == split(0) and sbp["bn"]["y_0"] == split(0)
        assert sbp["bn"]["moving_mean_0"] == BROADCAST and sbp["bn"]["mean_0"] == BROADCAST
        grad = next(name for name, sig in sbp.items() if "gamma_diff_0" in sig.bn_in_op2sbp_parallel)
        assert sbp[grad]["dx_0"] == split(0) and sbp[grad]["gamma_diff_0"] == PARTIAL_SUM


def test_inference_batch_norm_on_two_devices_equals_one_device():
    """With the moving statistics (training=False) normalization is exact on any split off the channel axis."""
    x = np.random.default_rng(1).standard_normal((6, 3, 4)).astype(np.float32)
    outs = []
    for devices in (1, 2):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)

        @flow.global_function()
        def job(x: tp.Numpy.Placeholder((6, 3, 4))) -> tp.Numpy:
            return flow.layers.batch_normalization(x, axis=1, name="bn",
                                                   moving_mean_initializer=flow.constant_initializer(0.5),
                                                   moving_variance_initializer=flow.constant_initializer(2.0))
        outs.append(job(x))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6)
    np.testing.assert_allclose(outs[0], (x - 0.5) / np.sqrt(2.0 + 1e-3), rtol=1e-5, atol=1e-6)
