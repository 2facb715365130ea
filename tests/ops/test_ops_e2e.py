"""Ops through real jobs (trace, passes, Plan, runtime), both kernel modes; inference errors at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError

RNG = np.random.default_rng(7)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_an_mlp_forward_matches_numpy(kernel_impl):
    x = RNG.standard_normal((8, 1, 4, 4)).astype(np.float32)
    labels = RNG.integers(0, 5, 8).astype(np.int32)

    @flow.global_function()
    def forward(images: tp.Numpy.Placeholder((8, 1, 4, 4)),
                labels: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
        flat = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(flat, 6, activation=flow.nn.relu,
                                   kernel_initializer=flow.random_uniform_initializer(-0.5, 0.5), name="hidden")
        logits = flow.layers.dense(hidden, 5, kernel_initializer=flow.truncated_normal(0.3), name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        probs = flow.nn.softmax(logits)
        mixed = flow.math.reduce_mean(loss) + flow.math.reduce_max(probs, axis=1) * 0.0
        return flow.concat([mixed, flow.cast(flow.math.argmax(logits), flow.float)], axis=0)

    out = forward(x, labels)
    w = flow.get_all_variables()
    assert sorted(w) == ["hidden-bias", "hidden-weight", "output-bias", "output-weight"]
    assert w["hidden-weight"].shape == (6, 16) and w["output-weight"].shape == (5, 6)
    hidden = np.maximum(x.reshape(8, -1) @ w["hidden-weight"].T + w["hidden-bias"], 0)
    logits = hidden @ w["output-weight"].T + w["output-bias"]
    loss = -np.log(softmax(logits)[np.arange(8), labels])
    np.testing.assert_allclose(out[:8], loss.mean() + 0 * softmax(logits).max(1), rtol=1e-5)
    np.testing.assert_array_equal(out[8:], np.argmax(logits, axis=1))


def test_arithmetic_operators_and_scalars(kernel_impl):
    @flow.global_function()
    def arith(a: tp.Numpy.Placeholder((3, 4)), b: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        return (2 - a) * b / 4 + 1 / (a * a + 1) - (-b) + flow.math.exp(flow.math.tanh(a)) + flow.math.sigmoid(b)

    a, b = RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
    want = (2 - a) * b / 4 + 1 / (a * a + 1) + b + np.exp(np.tanh(a)) + 1 / (1 + np.exp(-b))
    np.testing.assert_allclose(arith(a, b), want, rtol=1e-5, atol=1e-6)


def test_matmul_transpose_and_constants(kernel_impl):
    @flow.global_function()
    def mm(a: tp.Numpy.Placeholder((5, 3)), b: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        product = flow.matmul(a, b, transpose_b=True)
        return flow.transpose(product) + flow.constant(1.5, shape=(1,)) + flow.zeros_like(flow.transpose(product))

    a, b = RNG.standard_normal((5, 3)).astype(np.float32), RNG.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(mm(a, b), (a @ b.T).T + 1.5, rtol=1e-5)


def job_raising(build, shape):
    def bad(x):
        return build(x)

    # Real annotation objects: under `from __future__ import annotations` a local name in an annotation
    # cannot be evaluated (flowlab says so), so this helper sets them directly.
    bad.__annotations__ = {"x": tp.Numpy.Placeholder(shape), "return": tp.Numpy}
    job = flow.global_function()(bad)
    with pytest.raises(OpInferError) as err:
        job(np.zeros(shape, np.float32))
    return str(err.value)


@pytest.mark.parametrize("build, shape, words", [
    (lambda x: flow.reshape(x, [5, -1]), (2, 3), ["cannot reshape f32[2,3] (6 elements) to [5, -1]",
                                                   "6 is not a multiple of 5"]),
    (lambda x: flow.reshape(x, [4, 2]), (2, 3), ["(6 elements) to [4, 2] (8 elements)"]),
    (lambda x: flow.reshape(x, [-1, -1]), (2, 3), ["at most one dimension may be -1"]),
    (lambda x: flow.matmul(x, x), (2, 3), ["inner dimensions differ", "[2,3] by [2,3]"]),
    (lambda x: x + flow.reshape(x, [3, 2]), (2, 3), ["shapes [2, 3] and [3, 2] do not broadcast"]),
    (lambda x: flow.concat([x, flow.transpose(x)], axis=0), (2, 3), ["must match in dtype and in every axis but 0"]),
    (lambda x: flow.math.reduce_sum(x, axis=2), (2, 3), ["axis 2 is out of range for a rank-2 blob"]),
    (lambda x: flow.transpose(x, [0, 0]), (2, 3), ["perm [0, 0] is not a permutation"]),
    (lambda x: x + flow.cast(x, flow.int32), (2, 3), ["different dtypes", "flow.cast"]),
    (lambda x: flow.nn.sparse_softmax_cross_entropy_with_logits(x, x), (2, 3),
     ["input 'label' has dtype float32; sparse_softmax_cross_entropy accepts int8, int32, int64, uint8"]),
    (lambda x: flow.nn.bias_add(x, x), (2, 3), ["the bias must be 1-D with 3 elements"]),
])
def test_inference_errors_name_expected_and_given(build, shape, words):
    message = job_raising(build, shape)
    assert "test_ops_e2e.py:" in message  # the user's line
    for w in words:
        assert w in message


def test_bad_python_arguments():
    with pytest.raises(TypeError, match="reshape's shape must be a list of ints"):
        job_raising(lambda x: flow.reshape(x, "2,3"), (2, 3))
    flow.clear_default_session()
    with pytest.raises(TypeError, match="takes blobs or Python numbers; got LazyBlob and ndarray"):
        job_raising(lambda x: x + np.ones(3), (2, 3))
    flow.clear_default_session()
    with pytest.raises(ValueError, match="unknown dtype 'float99'"):
        job_raising(lambda x: flow.cast(x, "float99"), (2, 3))
