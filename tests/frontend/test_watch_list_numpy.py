"""``flow.watch(blob, handler)`` hands the handler what its annotation asks for, as OneFlow's
``TransformWatchedBlob``: ``tp.ListNumpy`` one array per device (``numpy_list()``: each device's piece of a mirrored
blob, the whole blob for each device where it lies B, and a consistent blob as a list of one), ``tp.Numpy`` (or
no annotation) the blob seen consistently."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp


@pytest.mark.parametrize("devices", [1, 2, 3])
def test_a_list_numpy_handler_gets_each_devices_piece_and_a_numpy_one_the_joined_blob(devices):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    got: dict[str, object] = {}

    def as_list(y: tp.ListNumpy) -> None:
        got["list"] = y

    def as_numpy(y: tp.Numpy) -> None:
        got["numpy"] = y

    def bare(y) -> None:  # no annotation: the consistent view, as tp.Numpy
        got["bare"] = y

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> None:
        with flow.scope.mirrored_view():
            y = flow.math.square(x)
            flow.watch(y, as_list)
            flow.watch(y, as_numpy)
            flow.watch(y, bare)

    x = np.arange(6 * devices, dtype=np.float32).reshape(2 * devices, 3)
    job(list(np.split(x, devices)))
    assert isinstance(got["list"], list) and len(got["list"]) == devices
    for piece, want in zip(got["list"], np.split(x, devices)):
        np.testing.assert_array_equal(piece, want * want)
    for key in ("numpy", "bare"):
        assert isinstance(got[key], np.ndarray)
        np.testing.assert_array_equal(got[key], x * x)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_list_numpy_handler_of_a_broadcast_or_consistent_blob(devices):
    """A mirrored B blob (a variable cast into the mirrored view) is whole on every device: one copy each; a
    consistent blob is one local blob (OneFlow's LocalMirroredTensor of one ndarray): a list of one."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    got: dict[str, list] = {}

    def mirrored_b(y: tp.ListNumpy) -> None:
        got["mirrored_b"] = y

    def consistent(y: tp.ListNumpy) -> None:
        got["consistent"] = y

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2 * devices, 3))) -> None:
        v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
        flow.watch(x + 1.0, consistent)
        with flow.scope.mirrored_view():
            flow.watch(flow.cast_to_current_logical_view(v) * 2.0, mirrored_b)

    x = np.arange(6 * devices, dtype=np.float32).reshape(2 * devices, 3)
    job(x)
    assert len(got["mirrored_b"]) == devices
    for piece in got["mirrored_b"]:
        np.testing.assert_array_equal(piece, np.full(3, 1.0, np.float32))
    got["mirrored_b"][0][0] = 9.0  # each device's array is its own
    assert got["mirrored_b"][-1][0] == 1.0
    assert len(got["consistent"]) == 1
    np.testing.assert_array_equal(got["consistent"][0], x + 1.0)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_list_numpy_watch_of_a_mirrored_sum_gets_each_devices_own_sum(devices):
    """As a tp.ListNumpy return: each device's own reduce_sum over its rows (OneFlow's per-device sub-op), not a
    partial sum added over the devices; a tp.Numpy watch of the same blob beside it sees the devices' sums stacked."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    got: dict[str, object] = {}

    def as_list(y: tp.ListNumpy) -> None:
        got["list"] = y

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> None:
        with flow.scope.mirrored_view():
            flow.watch(flow.math.reduce_sum(x, axis=0, keepdims=True), as_list)

    x = np.arange(6 * devices, dtype=np.float32).reshape(2 * devices, 3)
    job(list(np.split(x, devices)))
    assert len(got["list"]) == devices
    for piece, rows in zip(got["list"], np.split(x, devices)):
        np.testing.assert_array_equal(piece, rows.sum(axis=0, keepdims=True))


@pytest.mark.parametrize("devices", [2, 3])
def test_watch_diff_with_a_list_numpy_handler_gets_each_devices_gradient(devices):
    """h = x + v per device, loss = each device's mean of h**2 (seeded with ones, as OneFlow's backward):
    dh = 2 h / 6 on each device's rows; a tp.Numpy handler gets them joined."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    got: dict[str, object] = {}

    def as_list(d: tp.ListNumpy) -> None:
        got["list"] = d

    def as_numpy(d: tp.Numpy) -> None:
        got["numpy"] = d

    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=config)
    def train(x: tp.ListNumpy.Placeholder((2, 3))) -> None:
        v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
        h = x + flow.cast_to_current_logical_view(v)
        flow.watch_diff(h, as_list)
        flow.watch_diff(h, as_numpy)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(
            flow.math.reduce_mean(flow.math.square(h)))

    x = np.arange(6 * devices, dtype=np.float32).reshape(2 * devices, 3)
    train(list(np.split(x, devices)))
    assert len(got["list"]) == devices
    for piece, rows in zip(got["list"], np.split(x, devices)):
        np.testing.assert_allclose(piece, 2 * (rows + 0.5) / 6, rtol=1e-6)
    np.testing.assert_allclose(got["numpy"], 2 * (x + 0.5) / 6, rtol=1e-6)
