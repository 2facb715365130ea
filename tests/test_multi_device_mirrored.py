"""Mirrored ops on several devices: what each device computes and the shapes its pieces have.

OneFlow (oneflow-distributed.md §2.4): a mirrored op is one sub-op per device, working on that device's piece.
A consistent S(0) blob read by a mirrored op is split into per-device pieces (DistributeSplit); a mirrored blob
made from per-device data (``ListNumpy``) is its pieces. A mirrored blob's ``tp.ListNumpy`` return gives each
device's piece.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.compiler.slices import logical_desc


@pytest.mark.parametrize("devices", [2, 3])
def test_a_mirrored_op_on_a_consistent_split_blob_gives_each_device_its_rows(devices):
    """The consistent blob's desc is logical, so the mirrored op inferred from it has a logical desc too; its
    pieces are that blob's balanced slices (4 rows over 3 devices: 2, 1, 1), not the logical shape again."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.ListNumpy:
        y = flow.math.relu(x)  # consistent, S(0)
        with flow.scope.mirrored_view():
            return flow.math.square(y)

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    pieces = job(x)
    want = np.array_split(x * x, devices)
    assert [p.shape for p in pieces] == [w.shape for w in want]
    for got, ref in zip(pieces, want):
        np.testing.assert_array_equal(got, ref)
    user = flow.default_session().job_set.job("job")
    assert logical_desc(user, "square_0/y_0").shape == (4, 3)  # was (4 * devices, 3): the split axis multiplied


def test_a_mirrored_op_on_per_device_data_has_one_devices_piece_as_its_desc():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.math.square(x)

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    pieces = job([x[:2], x[2:]])
    np.testing.assert_array_equal(np.concatenate(pieces), x * x)
    user = flow.default_session().job_set.job("job")
    assert user.blob_descs["square_0/y_0"].shape == (2, 3)
    assert logical_desc(user, "square_0/y_0").shape == (4, 3)


def test_a_mirrored_loss_inferred_from_consistent_blobs_is_counted_once():
    """The mirrored loss's desc is the logical (4, 3): 12 elements in all, not 12 per device. Training equals
    one-device SGD on the whole batch (NumPy: v -= lr * mean(2 (x + v)) over the rows)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.ListNumpy:
        v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
        with flow.scope.mirrored_view():
            loss = flow.math.square(flow.math.relu(x) + v)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(loss)
        return loss

    x = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    pieces = train(x)
    relu = np.maximum(x, 0)
    np.testing.assert_allclose(np.concatenate(pieces), (relu + 0.5) ** 2, rtol=1e-6)
    user = flow.default_session().job_set.job("train")
    assert user.op("v_optimizer").attrs["scale"] == pytest.approx(1 / 12)
    want = 0.5 - 0.5 * (2 * (relu + 0.5)).sum(axis=0) / 12
    np.testing.assert_allclose(flow.get_all_variables()["v"], want, rtol=1e-6)
