"""gelu, leaky_relu, flatten/expand_dims/squeeze, gather, slice and the dense/sigmoid cross entropies:
kernels in both implementations against NumPy, and gradients against finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from tests.helpers.gradients import check, v

from .helpers import run_op

RNG = np.random.default_rng(9)
IMPLS = ["reference", "numba"]
ERF = np.vectorize(math.erf)


@pytest.mark.parametrize("impl", IMPLS)
def test_activations(impl):
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(run_op("gelu", {"x": [x]}, {}, impl)[0], 0.5 * x * (1 + ERF(x / math.sqrt(2))),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(run_op("leaky_relu", {"x": [x]}, {"alpha": 0.1}, impl)[0], np.where(x > 0, x, 0.1 * x))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather_and_its_adjoint(impl, axis):
    params = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    ids = RNG.integers(0, params.shape[axis], (2, 3)).astype(np.int32)
    (out,) = run_op("gather", {"in": [params], "indices": [ids]}, {"axis": axis}, impl)
    np.testing.assert_array_equal(out, np.take(params, ids, axis=axis))
    dy = RNG.standard_normal(out.shape)
    (dx,) = run_op("unsorted_segment_sum_like", {"data": [dy], "segment_ids": [ids], "like": [params * 0.0]},
                   {"axis": axis}, impl)
    assert np.sum(np.take(params.astype(np.float64), ids, axis=axis) * dy) == pytest.approx(np.sum(params * dx))


@pytest.mark.parametrize("impl", IMPLS)
def test_slice_and_its_grad(impl):
    x = RNG.standard_normal((5, 6, 4)).astype(np.float32)
    spec = ((1, 4, 1), (0, 6, 2), (None, None, None))
    (y,) = run_op("slice", {"x": [x]}, {"slice_tup_list": spec}, impl)
    np.testing.assert_array_equal(y, x[1:4, 0:6:2, :])
    (dx,) = run_op("slice_grad", {"dy": [y], "like": [x]}, {"slice_tup_list": spec}, impl)
    expected = np.zeros_like(x)
    expected[1:4, 0:6:2, :] = y
    np.testing.assert_array_equal(dx, expected)


@pytest.mark.parametrize("impl", IMPLS)
def test_dense_and_sigmoid_cross_entropy(impl):
    logits = RNG.standard_normal((4, 6)).astype(np.float32) * 3
    labels = RNG.random((4, 6)).astype(np.float32)
    labels /= labels.sum(1, keepdims=True)
    prob, loss = run_op("softmax_cross_entropy", {"prediction": [logits], "label": [labels]}, {}, impl)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(loss, -(labels * np.log(p)).sum(1), rtol=1e-5)
    z = (RNG.random((4, 6)) > 0.5).astype(np.float32)
    (bce,) = run_op("sigmoid_cross_entropy", {"prediction": [logits], "label": [z]}, {}, impl)
    s = 1 / (1 + np.exp(-logits.astype(np.float64)))
    np.testing.assert_allclose(bce, -(z * np.log(s) + (1 - z) * np.log(1 - s)), rtol=1e-5, atol=1e-6)


def test_reshape_family_through_a_job():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3, 1, 4))) -> tp.Numpy:
        return flow.flatten(flow.squeeze(flow.expand_dims(x, 0), [0, 3]), start_dim=1)

    x = RNG.standard_normal((2, 3, 1, 4)).astype(np.float32)
    out = job(x)
    assert out.shape == (2, 12)
    np.testing.assert_array_equal(out, x.reshape(2, 12))
    with pytest.raises(ValueError, match="axis 1 of f32\\[2,3,1,4\\] has size 3, not 1"):
        flow.clear_default_session()

        @flow.global_function()
        def bad(x: tp.Numpy.Placeholder((2, 3, 1, 4))) -> tp.Numpy:
            return flow.squeeze(x, [1])

        bad(x)


def test_gradients():
    x, labels = v(3, 5), RNG.random((3, 5))
    labels /= labels.sum(1, keepdims=True)
    ids = RNG.integers(0, 3, 4).astype(np.int32)
    z = (RNG.random((3, 5)) > 0.5).astype(np.float64)

    def build(b, f):
        g = flow.nn.gelu(b["x"]) + flow.nn.leaky_relu(b["x"], alpha=0.1)
        picked = flow.gather(b["x"], f["ids"], axis=0)  # (4, 5)
        sliced = flow.slice_v2(b["x"], [(0, 3, 2), (1, 5, 1)])  # (2, 4)
        xent = flow.nn.softmax_cross_entropy_with_logits(f["labels"], b["x"])  # (3,)
        bce = flow.nn.sigmoid_cross_entropy_with_logits(f["z"], b["x"])  # (3, 5)
        return flow.concat([flow.reshape(g, [-1]), flow.reshape(picked, [-1]), flow.reshape(sliced, [-1]), xent,
                            flow.reshape(bce, [-1])], axis=0)

    def forward(s, f):
        a = s["x"]
        g = 0.5 * a * (1 + ERF(a / math.sqrt(2))) + np.where(a > 0, a, 0.1 * a)
        p = np.exp(a - a.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        sig = 1 / (1 + np.exp(-a))
        bce = -(f["z"] * np.log(sig) + (1 - f["z"]) * np.log(1 - sig))
        return np.concatenate([g.ravel(), a[f["ids"]].ravel(), a[0:3:2, 1:5].ravel(),
                               -(f["labels"] * np.log(p)).sum(1), bce.ravel()])

    check({"x": x}, build, forward, {"ids": ids, "labels": labels, "z": z}, (15 + 20 + 8 + 3 + 15,))
