"""OneFlow's mirrored-strategy docs programs (docs/extended_topics/consistent_mirrored.md) and their variants on 2
and 3 CPU devices, against the one-device run and NumPy: ListNumpy in and out, a mirrored train job with SGD, a
mirrored eval job reading the same variables (one array per device, and as tp.Numpy the batch), a consistent
placeholder fed to a mirrored job (its S(0) rows split as OneFlow's DistributeSplit does, 7 rows over 3 devices:
3, 2, 2) with a watch, and a consistent eval job sharing the mirrored job's variables."""

from __future__ import annotations

from typing import Tuple

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

CLASSES, STEPS = 5, 3


def _logits(images):
    init = flow.truncated_normal(0.1)
    flat = flow.reshape(images, [images.shape[0], -1])  # images.shape[0]: one device's rows in the mirrored view
    hidden = flow.layers.dense(flat, 8, activation=flow.nn.relu, kernel_initializer=init, name="hidden")
    return flow.layers.dense(hidden, CLASSES, kernel_initializer=init, name="output")


def _batches(rows: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((rows, 1, 4, 4)).astype(np.float32), rng.integers(0, CLASSES, rows).astype(np.int32))
            for _ in range(STEPS)]


def _sgd(loss, momentum: float) -> None:
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=momentum).minimize(loss)


def _one_device(rows: int, seed: int, momentum: float) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((rows, 1, 4, 4)),
                  labels: tp.Numpy.Placeholder((rows,), dtype=flow.int32)) -> tp.Numpy:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, _logits(images), name="softmax_loss")
        _sgd(loss, momentum)
        return loss

    losses = np.array([train_job(x, y) for x, y in _batches(rows, seed)])
    return losses, flow.get_all_variables()


def _numpy_logits(x: np.ndarray, v: dict[str, np.ndarray]) -> np.ndarray:
    hidden = np.maximum(x.reshape(len(x), -1) @ v["hidden-weight"].T + v["hidden-bias"], 0)
    return hidden @ v["output-weight"].T + v["output-bias"]


@pytest.mark.parametrize("devices", [2, 3])
def test_the_docs_mirrored_train_and_eval_jobs(devices):
    rows = 12
    want_losses, want_vars = _one_device(rows, 5, 0.0)
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    per = rows // devices
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=config)
    def train_job(images: tp.ListNumpy.Placeholder((per, 1, 4, 4)),
                  labels: tp.ListNumpy.Placeholder((per,), dtype=flow.int32)) -> tp.ListNumpy:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, _logits(images), name="softmax_loss")
        _sgd(loss, 0.0)
        return loss

    @flow.global_function(function_config=config)
    def eval_job(images: tp.ListNumpy.Placeholder((per, 1, 4, 4))) -> Tuple[tp.ListNumpy, tp.ListNumpy]:
        logits = _logits(images)
        return logits, flow.math.argmax(logits)

    @flow.global_function(function_config=config)
    def eval_batch(images: tp.ListNumpy.Placeholder((per, 1, 4, 4))) -> tp.Numpy:
        return _logits(images)

    losses = []
    for x, y in _batches(rows, 5):
        pieces = train_job(list(np.split(x, devices)), list(np.split(y, devices)))
        assert [p.shape for p in pieces] == [(per,)] * devices
        losses.append(np.concatenate(pieces))  # the docs' total_loss = np.array([*loss[0], *loss[1]])
    np.testing.assert_allclose(np.array(losses), want_losses, rtol=1e-5)
    variables = flow.get_all_variables()
    for name, value in want_vars.items():
        np.testing.assert_allclose(variables[name], value, rtol=1e-5, atol=1e-7, err_msg=name)
    x = _batches(rows, 9)[0][0]
    want = _numpy_logits(x, variables)
    for _ in range(10):  # past the replay layer's capture and fusing (8 calls)
        logits, labels = eval_job(list(np.split(x, devices)))
        assert len(logits) == devices and len(labels) == devices
        np.testing.assert_allclose(np.concatenate(logits), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.concatenate(labels), want.argmax(axis=1))
        np.testing.assert_allclose(eval_batch(list(np.split(x, devices))), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("devices", [2, 3])
def test_a_consistent_placeholder_in_a_mirrored_job_with_a_watch_and_a_consistent_eval_job(devices):
    rows = 7  # 4, 3 on two devices; 3, 2, 2 on three
    want_losses, want_vars = _one_device(rows, 2, 0.9)
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())
    watched = []

    @flow.global_function(type="train", function_config=config)
    def train_job(images: tp.Numpy.Placeholder((rows, 1, 4, 4)),
                  labels: tp.Numpy.Placeholder((rows,), dtype=flow.int32)) -> tp.ListNumpy:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, _logits(images), name="softmax_loss")
        flow.watch(loss, watched.append)
        _sgd(loss, 0.9)
        return loss

    @flow.global_function()
    def eval_job(images: tp.Numpy.Placeholder((rows, 1, 4, 4))) -> tp.Numpy:
        return _logits(images)

    cuts = [len(p) for p in np.array_split(np.zeros(rows), devices)]
    for step, (x, y) in enumerate(_batches(rows, 2)):
        pieces = train_job(x, y)
        assert [len(p) for p in pieces] == cuts
        np.testing.assert_allclose(np.concatenate(pieces), want_losses[step], rtol=1e-5)
        np.testing.assert_allclose(watched[step], want_losses[step], rtol=1e-5)
    variables = flow.get_all_variables()
    for name, value in want_vars.items():
        np.testing.assert_allclose(variables[name], value, rtol=1e-5, atol=1e-7, err_msg=name)
    x = _batches(rows, 4)[0][0]
    np.testing.assert_allclose(eval_job(x), _numpy_logits(x, variables), rtol=1e-5, atol=1e-6)
