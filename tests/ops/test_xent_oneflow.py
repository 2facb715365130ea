"""The dense cross entropies as OneFlow v0.3.4's kernels compute them.

- ``softmax_cross_entropy_grad`` is ``dy * (prob - labels)`` (user/kernels/softmax_cross_entropy_kernel.cpp,
  ComputeDiffWithSoftmax), also when a row of labels does not sum to 1 (the derivative of the loss would be
  ``prob * sum(labels) - labels`` there; OneFlow, like TensorFlow, does not scale prob).
- ``sigmoid_cross_entropy`` takes int8 and int32 labels as well as labels of the logits' floating dtype
  (core/kernel/sigmoid_cross_entropy_kernel.cu registers (float|double, int32|int8|same)); the loss has the logits'
  dtype and the gradient wrt the logits is ``dy * (sigmoid(x) - z)``.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError
from tests.helpers.gradients import flowlab_grads

from .helpers import run_op

RNG = np.random.default_rng(23)
IMPLS = ["reference", "numba"]


def _softmax64(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def unnormalised_labels(shape: tuple[int, ...]) -> np.ndarray:
    labels = RNG.random(shape) * 2.0  # rows sum to about shape[-1], none to 1
    labels[0] = 0.0  # and one row of zeros: OneFlow's gradient there is prob, not 0
    return labels


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_softmax_xent_grad_kernel_is_prob_minus_labels(impl, dtype, tol):
    prob = _softmax64(RNG.standard_normal((4, 7)))
    labels, dy = unnormalised_labels((4, 7)), RNG.standard_normal(4)
    (dx,) = run_op("softmax_cross_entropy_grad", {"prob": [prob.astype(dtype)], "label": [labels.astype(dtype)],
                                                  "dy": [dy.astype(dtype)]}, {}, impl)
    np.testing.assert_allclose(dx, dy[:, None] * (prob - labels), rtol=tol, atol=tol)


def test_softmax_xent_gradient_through_a_job():
    x = RNG.standard_normal((3, 2, 5))
    labels, weight = unnormalised_labels((3, 2, 5)), RNG.standard_normal((3, 2))

    def build(v, f):
        return flow.nn.softmax_cross_entropy_with_logits(f["labels"], v["x"])

    got = flowlab_grads({"x": x}, build, {"labels": labels, "weight": weight})
    np.testing.assert_allclose(got["x"], weight[..., None] * (_softmax64(x) - labels), rtol=1e-12, atol=1e-12)


def _bce64(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    x, z = x.astype(np.float64), z.astype(np.float64)
    return -(z * np.log(1 / (1 + np.exp(-x))) + (1 - z) * np.log(1 - 1 / (1 + np.exp(-x))))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("label_dtype", [np.int32, np.int8])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_xent_kernels_take_integer_labels(impl, label_dtype, dtype):
    x = (RNG.standard_normal((3, 4)) * 3).astype(dtype)
    z = RNG.integers(0, 2, (3, 4)).astype(label_dtype)
    dy = RNG.standard_normal((3, 4)).astype(dtype)
    (loss,) = run_op("sigmoid_cross_entropy", {"prediction": [x], "label": [z]}, {}, impl)
    assert loss.dtype == dtype
    np.testing.assert_allclose(loss, _bce64(x, z), rtol=1e-5, atol=1e-6)
    (dx,) = run_op("sigmoid_cross_entropy_grad", {"prediction": [x], "label": [z], "dy": [dy]}, {}, impl)
    assert dx.dtype == dtype
    want = (1 / (1 + np.exp(-x.astype(np.float64))) - z) * dy
    np.testing.assert_allclose(dx, want, rtol=1e-5, atol=1e-6)


def test_sigmoid_xent_with_int32_labels_value_and_gradient_through_jobs():
    x = RNG.standard_normal((4, 3)) * 2
    z = RNG.integers(0, 2, (4, 3)).astype(np.int32)

    @flow.global_function()
    def loss_job(logits: tp.Numpy.Placeholder((4, 3), dtype=flow.float64),
                 labels: tp.Numpy.Placeholder((4, 3), dtype=flow.int32)) -> tp.Numpy:
        return flow.nn.sigmoid_cross_entropy_with_logits(labels, logits)

    out = loss_job(x, z)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, _bce64(x, z), rtol=1e-12)

    flow.clear_default_session()
    weight = RNG.standard_normal((4, 3))
    got = flowlab_grads({"x": x}, lambda v, f: flow.nn.sigmoid_cross_entropy_with_logits(f["z"], v["x"]),
                        {"z": z, "weight": weight})
    np.testing.assert_allclose(got["x"], weight * (1 / (1 + np.exp(-x)) - z), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("label_dtype, match", [
    (flow.int64, "int64"), (flow.float32, r"labels .*f32.* logits .*f64"), (flow.uint8, "uint8")])
def test_sigmoid_xent_refuses_other_label_dtypes(label_dtype, match):
    @flow.global_function()
    def job(logits: tp.Numpy.Placeholder((2, 3), dtype=flow.float64),
            labels: tp.Numpy.Placeholder((2, 3), dtype=label_dtype)) -> tp.Numpy:
        return flow.nn.sigmoid_cross_entropy_with_logits(labels, logits)

    with pytest.raises(OpInferError, match=match):
        job(np.zeros((2, 3)), np.zeros((2, 3), label_dtype.np))
