"""An op reading one blob as two of its arguments (``w * w``) on several devices (issue 25).

SBP inference filled a candidate signature per argument by looking up which inputs read the argument's blobs, so
when ``x`` and ``y`` read the same blob, setting ``y`` overwrote ``x``: broadcast_mul's [P, B -> P] became
[B, B -> P], an invalid signature that won over [B, B -> B] (listed first, same cost). A consistent ``w * w`` of a
B variable on two devices came out doubled, and the same op in a mirrored train job (``loss = 0.5 *
reduce_sum(w * w)``) was refused with SbpInferError. OneFlow runs that job per device: the variable is consistent
(B) and each mirrored op reads it through a DistributeClone, so each device computes the whole loss; the clone's
gradient is a DistributeAdd of the devices' gradients, and the loss count is one element per device."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

W0 = np.array([1.0, -2.0, 3.0], np.float32)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_consistent_product_of_a_blob_with_itself_is_not_multiplied_by_the_devices(devices):
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((6, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            w = flow.get_variable("w", shape=(3,), initializer=flow.constant_initializer(2.0))
            return flow.math.reduce_sum(w * w) + 0.0 * flow.math.reduce_sum(x)  # B x B: each device the whole

    np.testing.assert_allclose(job(np.ones((6, 3), np.float32)), [12.0], rtol=1e-6)


def test_a_blob_read_as_two_inputs_in_two_sbps():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((6, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            return flow.matmul(x, x, transpose_b=True)  # a: S(0), b: B (boxed from S(0))

    x = np.arange(18, dtype=np.float32).reshape(6, 3) / 10
    np.testing.assert_allclose(job(x), x @ x.T, rtol=1e-6)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_mirrored_train_job_whose_loss_reads_only_a_variable_runs_per_device(devices):
    lr = 0.1
    flow.config.cpu_device_num(devices)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=config)
    def train(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            w = flow.get_variable("w", shape=(3,), initializer=flow.constant_initializer(0.0))
            loss = 0.5 * flow.math.reduce_sum(w * w)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [lr]), momentum=0).minimize(loss)
        return loss

    flow.load_variables({"w": W0})
    w = W0.astype(np.float64)
    for _ in range(3):
        pieces = train([np.ones((2, 3), np.float32)] * devices)
        # each device's own loss: the whole 0.5 * |w|^2, computed on its clone of w
        assert len(pieces) == devices
        for piece in pieces:
            np.testing.assert_allclose(piece.reshape(-1), [0.5 * (w * w).sum()], rtol=1e-6)
        # OneFlow: dw = DistributeAdd over the devices of d(loss_i)/dw = devices * w, divided by the loss count
        # (one element per device): w -= lr * w
        w = w - lr * (devices * w) / devices
        np.testing.assert_allclose(flow.get_all_variables()["w"], w, rtol=1e-6)
