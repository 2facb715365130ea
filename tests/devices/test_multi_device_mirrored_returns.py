"""Mirrored returns and what reads a mirrored call: ``tp.ListNumpy`` gives each device's blob (OneFlow's mirrored
list: S pieces cut on their axis, a B blob for every device), ``tp.Numpy`` the blob seen consistently (OneFlow's
``LocalMirroredTensor.numpy()``), a mirrored job returns every blob per device (OneFlow adds its return ops in the
job's default view), and watches, the debugger and catch_nan see mirrored blobs and arguments as a call does.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp


@pytest.mark.parametrize("devices", [2, 3])
def test_a_broadcast_mirrored_return_gives_every_device_the_whole_blob(devices):
    """A mirrored blob that lies B (a variable cast into the mirrored view, a reduction of it) is each device's
    whole blob: tp.ListNumpy returns one array per device, each the whole blob (OneFlow returns each device's
    blob of the mirrored list), never one array."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> Tuple[tp.ListNumpy, tp.ListNumpy, tp.ListNumpy]:
        with flow.scope.mirrored_view():
            v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
            v = flow.cast_to_current_logical_view(v)
            return v * 2.0, flow.math.reduce_sum(v, axis=0, keepdims=True), flow.math.square(x)

    x = np.arange(6 * devices, dtype=np.float32).reshape(2 * devices, 3)
    doubled, total, squares = job(list(np.split(x, devices)))
    assert len(doubled) == devices and len(total) == devices
    for got in doubled:
        np.testing.assert_array_equal(got, np.full(3, 1.0, np.float32))
    for got in total:
        np.testing.assert_array_equal(got, np.array([1.5], np.float32))
    doubled[0][0] = 7.0  # each device's array is its own
    assert doubled[-1][0] == 1.0
    for got, piece in zip(squares, np.split(x, devices)):
        np.testing.assert_array_equal(got, piece * piece)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_mirrored_return_split_on_axis_1_gives_each_devices_piece(devices):
    """A mirrored transpose of per-device rows lies S(1): each device's piece is its own rows transposed."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.transpose(x, perm=[1, 0])

    x = np.arange(6 * devices, dtype=np.float32).reshape(2 * devices, 3)
    pieces = job(list(np.split(x, devices)))
    assert len(pieces) == devices
    for got, piece in zip(pieces, np.split(x, devices)):
        np.testing.assert_array_equal(got, piece.T)


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("per_device_data", [True, False])
def test_watching_a_mirrored_blob_sees_it_consistently(devices, per_device_data):
    """flow.watch / flow.watch_diff in the mirrored view hand the handler the blob seen consistently (OneFlow's
    LocalMirroredTensor.numpy(): the pieces joined on their split axis). The watch is the runtime's, not a
    per-device op: it was traced as a mirrored foreign_watch with only a B signature, a compile error."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    rows = 6 // devices if per_device_data else 6
    holder = tp.ListNumpy if per_device_data else tp.Numpy
    seen, seen_diff = [], []

    @flow.global_function(type="train")
    def train(x: holder.Placeholder((rows, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
            y = flow.math.square(x + flow.cast_to_current_logical_view(v))
            flow.watch(y, seen.append)
            flow.watch_diff(y, seen_diff.append)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(y)
            return y

    x = np.arange(18, dtype=np.float32).reshape(6, 3) / 10
    pieces = train(list(np.split(x, devices)) if per_device_data else x)
    want = (x + 0.5) ** 2
    np.testing.assert_allclose(np.concatenate(pieces), want, rtol=1e-6)
    assert len(seen) == 1 and len(seen_diff) == 1
    np.testing.assert_allclose(seen[0], want, rtol=1e-6)
    np.testing.assert_array_equal(seen_diff[0], np.ones((6, 3), np.float32))  # of the summed loss (seed ones)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_mirrored_job_returns_a_consistent_blob_per_device(devices):
    """OneFlow adds a job's return ops in the job's default view (compile_context.CurJobAddOp, after the function
    returned): in a mirrored job a returned consistent blob is read by a mirrored return, so a B blob (a variable)
    comes back once per device (DistributeClone) and an S(0) one as its per-device rows (DistributeSplit). A
    consistent P blob is no device's own and comes back whole, as before."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=config)
    def job(x: tp.Numpy.Placeholder((7, 3))) -> Tuple[tp.ListNumpy, tp.ListNumpy, tp.ListNumpy]:
        v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5))
        with flow.scope.consistent_view():
            rows = flow.math.relu(x)
            total = flow.math.reduce_sum(x)
        return v, rows, total

    x = np.arange(21, dtype=np.float32).reshape(7, 3) - 10
    v, rows, total = job(x)
    assert len(v) == devices
    for got in v:
        np.testing.assert_array_equal(got, np.full(3, 0.5, np.float32))
    assert [r.shape for r in rows] == [p.shape for p in np.array_split(x, devices)]
    np.testing.assert_array_equal(np.concatenate(rows), np.maximum(x, 0))
    assert len(total) == 1
    np.testing.assert_allclose(total[0], [x.sum()], rtol=1e-6)


def test_the_debugger_gives_a_mirrored_jobs_returns_per_device():
    """The debugger's result is put together as a call's (the pulled MirroredList): per device, and tp.Numpy joined."""
    flow.clear_default_session()
    flow.config.cpu_device_num(3)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=config)
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> Tuple[tp.ListNumpy, tp.Numpy, tp.ListNumpy]:
        v = flow.cast_to_current_logical_view(
            flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(0.5)))
        return v, flow.math.square(x), flow.transpose(x, perm=[1, 0])

    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    pieces = list(np.split(x, 3))
    want = job(pieces)
    dbg = flow.debug(job, pieces)
    dbg.continue_()
    v, squares, transposed = dbg.result
    assert len(v) == 3 and len(transposed) == 3
    for got in v:
        np.testing.assert_array_equal(got, np.full(3, 0.5, np.float32))
    np.testing.assert_array_equal(squares, x * x)
    for got, piece, called in zip(transposed, pieces, want[2]):
        np.testing.assert_array_equal(got, piece.T)
        np.testing.assert_array_equal(called, piece.T)


def test_each_returned_leaf_follows_its_own_annotation_on_one_device():
    """A tp.Numpy beside a tp.ListNumpy in a Tuple is one array (it was a one-array list: the whole annotation's
    kinds decided every leaf); a ListNumpy leaf of a one-device job is a one-array list."""
    flow.clear_default_session()

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> Tuple[tp.Numpy, tp.ListNumpy, tp.Bundle[tp.Numpy]]:
        return x, x, {"a": [x]}

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    whole, pieces, bundle = job([x])
    np.testing.assert_array_equal(whole, x)
    assert isinstance(pieces, list) and len(pieces) == 1
    np.testing.assert_array_equal(pieces[0], x)
    assert isinstance(bundle["a"], list) and len(bundle["a"]) == 1
    np.testing.assert_array_equal(bundle["a"][0], x)


def test_catch_nan_takes_a_mirrored_jobs_per_device_arguments():
    """catch_nan checks the call's arguments as a call does: one array per device for a ListNumpy placeholder."""
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
        with flow.scope.mirrored_view():
            return flow.math.square(x, name="sq")

    x = np.ones((4, 3), np.float32)
    x[3, 1] = 1e30  # the first call of the job: catch_nan names its jobs from the arguments
    with flow.debug.catch_nan() as catcher:
        job([x[:2], x[2:]])
    assert catcher.caught and catcher.op == "sq"
