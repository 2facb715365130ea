"""dtypes in real jobs: float16 runs (computed in float32), integers compute exactly, and a dtype an op does not
accept is refused while tracing, at the user's line (issue 9, defect 8)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError

RNG = np.random.default_rng(8)


def f16_reference(x, w):
    """The job below in float32, rounded to float16 at each op's output (what computing in float32 gives)."""
    h = np.maximum(x.astype(np.float32) @ w.astype(np.float32), 0).astype(np.float16)
    e = np.exp(h.astype(np.float32) - h.astype(np.float32).max(1, keepdims=True))
    soft = (e / e.sum(1, keepdims=True)).astype(np.float16)
    return soft, h.astype(np.float32).sum(0).astype(np.float16)


def test_float16_predict_job(kernel_impl):
    @flow.global_function()
    def half_Job(x: tp.Numpy.Placeholder((4, 3), dtype=flow.float16),
                 w: tp.Numpy.Placeholder((3, 5), dtype=flow.float16)) -> tuple[tp.Numpy, tp.Numpy]:
        h = flow.nn.relu(flow.matmul(x, w))
        return flow.nn.softmax(h), flow.math.reduce_sum(h, axis=0)

    x, w = RNG.standard_normal((4, 3)).astype(np.float16), RNG.standard_normal((3, 5)).astype(np.float16)
    soft, total = half_Job(x, w)
    assert soft.dtype == np.float16 and total.dtype == np.float16
    want_soft, want_total = f16_reference(x, w)
    np.testing.assert_allclose(soft, want_soft, rtol=2e-3, atol=1e-3)
    np.testing.assert_allclose(total, want_total, rtol=2e-3, atol=1e-3)


def test_float16_train_job_updates_float16_variables(kernel_impl):
    @flow.global_function(type="train")
    def half_train(x: tp.Numpy.Placeholder((8, 4), dtype=flow.float16),
                   y: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
        w = flow.get_variable("w", shape=(4, 3), dtype=flow.float16, initializer=flow.constant_initializer(0.0))
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, flow.matmul(x, w))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0.9).minimize(loss)
        return loss

    x = RNG.standard_normal((8, 4)).astype(np.float16)
    y = RNG.integers(0, 3, 8).astype(np.int32)
    losses = [float(half_train(x, y).mean()) for _ in range(5)]
    assert losses[0] == pytest.approx(np.log(3), rel=1e-3)  # zero weights: uniform over 3 classes
    assert losses[-1] < losses[0] and np.isfinite(losses).all()
    w = flow.get_all_variables()["w"]
    assert w.dtype == np.float16 and np.abs(w).max() > 0
    # The first step by hand: w -= lr * x^T (p - onehot) / batch, with p uniform.
    flow.clear_default_session()


def test_integers_compute_exactly_and_wrap_as_numpy(kernel_impl):
    @flow.global_function()
    def int8_Job(a: tp.Numpy.Placeholder((2, 3), dtype=flow.int8),
                 b: tp.Numpy.Placeholder((3,), dtype=flow.int8)) -> tuple[tp.Numpy, tp.Numpy, tp.Numpy]:
        return (flow.nn.relu(a * b - 3) / b, flow.math.reduce_sum(a * a, axis=1), flow.math.argmax(a))

    a = np.array([[100, -7, 3], [-128, 5, 0]], np.int8)
    b = np.array([2, -3, 4], np.int8)
    q, s, m = int8_Job(a, b)
    prod = a * b - np.int8(3)  # int8 arithmetic wraps: 100 * 2 - 3 = -59
    np.testing.assert_array_equal(q, np.trunc(np.maximum(prod, 0) / b.astype(np.float64)).astype(np.int8))
    assert q.dtype == np.int8 and s.dtype == np.int8
    np.testing.assert_array_equal(s, (a * a).astype(np.int64).sum(1).astype(np.int8))
    np.testing.assert_array_equal(m, [0, 1])


@pytest.mark.parametrize("build, words", [
    (lambda a: flow.math.exp(a), "op 'exp_0' (exp) with inputs (x=i8[2,3]): input 'x' has dtype int8; exp accepts "
                                 "float16, float32, float64 (convert it with flow.cast)"),
    (lambda a: flow.matmul(a, flow.transpose(a)), "(matmul) with inputs (a=i8[2,3], b=i8[3,2]): input 'a' has dtype "
                                                  "int8; matmul accepts float16, float32, float64"),
    (lambda a: flow.nn.softmax(a), "input 'in' has dtype int8; softmax accepts float16, float32, float64"),
    (lambda a: flow.math.reduce_mean(a), "input 'input_tensor' has dtype int8; reduce_mean accepts float16"),
    (lambda a: flow.nn.conv2d(flow.reshape(a, (1, 1, 2, 3)), flow.reshape(a, (1, 1, 2, 3)), 1, "VALID"),
     "input 'in' has dtype int8; conv2d accepts float16, float32, float64"),
])
def test_a_dtype_an_op_does_not_accept_is_refused_at_the_users_line(build, words):
    def bad(a):
        return build(a)

    bad.__annotations__ = {"a": tp.Numpy.Placeholder((2, 3), dtype=flow.int8), "return": tp.Numpy}
    job = flow.global_function()(bad)
    with pytest.raises(OpInferError) as err:
        job(np.zeros((2, 3), np.int8))
    message = str(err.value)
    assert message.startswith("test_dtypes_e2e.py:")  # the user's line (the lambda above)
    assert words in message


def test_integer_scalars_wrap_as_numpy_integer_arithmetic(kernel_impl):
    """``x - 3`` on uint8 is x + (-3): the operand wraps into the blob's dtype, and the sum is x - 3 mod 256."""

    @flow.global_function()
    def wrap_Job(u: tp.Numpy.Placeholder((3,), dtype=flow.uint8),
                 i: tp.Numpy.Placeholder((3,), dtype=flow.int8)) -> tuple[tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy]:
        return u - 3, u * -1, i + 300, i * -2

    u, i = np.array([1, 5, 200], np.uint8), np.array([-128, 3, 127], np.int8)
    outs = wrap_Job(u, i)
    wants = [(u.astype(np.int64) - 3), (u.astype(np.int64) * -1), (i.astype(np.int64) + 300), (i.astype(np.int64) * -2)]
    for got, want, like in zip(outs, wants, (u, u, i, i)):
        assert got.dtype == like.dtype
        np.testing.assert_array_equal(got, want.astype(like.dtype))
