"""Every gradient rule against central finite differences, through the real autograd pass and runtime.

The variables get their gradient from one SGD step with lr 1 and no momentum: the loss is a 1-element sum, so
``w_before - w_after`` is exactly d(loss)/dw. Everything runs in float64 against a NumPy forward function.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from tests.helpers.gradients import RNG, check, flowlab_grads, v


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


UNARY = [
    ("relu", flow.math.relu, lambda x: np.maximum(x, 0), (-1, 1)),
    ("sigmoid", flow.math.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-2, 2)),
    ("tanh", flow.math.tanh, np.tanh, (-2, 2)),
    ("exp", flow.math.exp, np.exp, (-1, 1)),
    ("log", flow.math.log, np.log, (0.5, 2)),
    ("sqrt", flow.math.sqrt, np.sqrt, (0.5, 2)),
    ("square", flow.math.square, np.square, (-1, 1)),
    ("negative", flow.math.negative, np.negative, (-1, 1)),
    ("reciprocal", flow.math.reciprocal, lambda x: 1 / x, (0.5, 2)),
    ("abs", flow.math.abs, np.abs, (0.2, 1)),
]


@pytest.mark.parametrize("name, op, fn, domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, op, fn, domain):
    x = v(3, 4, low=domain[0], high=domain[1])
    check({"x": x}, lambda b, f: op(b["x"]), lambda s, f: fn(s["x"]), {}, (3, 4))


BINARY = [
    ("add", lambda a, b: a + b, np.add), ("sub", lambda a, b: a - b, np.subtract),
    ("mul", lambda a, b: a * b, np.multiply), ("div", lambda a, b: a / b, np.divide),
]


@pytest.mark.parametrize("name, op, fn", BINARY, ids=[b[0] for b in BINARY])
def test_binary_with_broadcasting(name, op, fn):
    a, b = v(3, 1, 4), v(2, 1, low=0.5, high=2.0)  # broadcast on both sides: (3, 2, 4)
    check({"a": a, "b": b}, lambda bl, f: op(bl["a"], bl["b"]), lambda s, f: fn(s["a"], s["b"]), {}, (3, 2, 4))


def test_scalar_forms():
    x = v(5, low=0.5, high=2)
    check({"x": x}, lambda b, f: (3.0 - b["x"]) * 2.0 / 4.0 + 1.0 / b["x"],
          lambda s, f: (3 - s["x"]) * 2 / 4 + 1 / s["x"], {}, (5,))


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul(ta, tb):
    a, b = v(*((4, 3) if ta else (3, 4))), v(*((5, 4) if tb else (4, 5)))
    check({"a": a, "b": b}, lambda bl, f: flow.matmul(bl["a"], bl["b"], transpose_a=ta, transpose_b=tb),
          lambda s, f: (s["a"].T if ta else s["a"]) @ (s["b"].T if tb else s["b"]), {}, (3, 5))


def test_bias_add_softmax_and_cross_entropy():
    x, bias = v(4, 6), v(6)
    labels = RNG.integers(0, 6, 4).astype(np.int32)

    def forward(s, f):
        logits = s["x"] + s["b"]
        p = softmax(logits)
        return -np.log(p[np.arange(4), f["labels"]])[:, None] + p * 0.3

    def build(b, f):
        logits = flow.nn.bias_add(b["x"], b["b"])
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(f["labels"], logits)
        return flow.reshape(loss, [4, 1]) + flow.nn.softmax(logits) * 0.3

    check({"x": x, "b": bias}, build, forward, {"labels": labels}, (4, 6))


@pytest.mark.parametrize("op, fn", [(flow.math.reduce_sum, np.sum), (flow.math.reduce_mean, np.mean),
                                    (flow.math.reduce_max, np.max)], ids=["sum", "mean", "max"])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), ((0, 2), True), (-1, False)])
def test_reductions(op, fn, axis, keepdims):
    x = v(3, 4, 2)
    out = np.reshape(fn(x, axis=axis, keepdims=keepdims), (-1,)).shape if axis is None else \
        fn(x, axis=axis, keepdims=keepdims).shape
    check({"x": x}, lambda b, f: op(b["x"], axis=axis, keepdims=keepdims),
          lambda s, f: np.reshape(fn(s["x"], axis=axis, keepdims=keepdims), out), {}, out or (1,))


def test_array_ops():
    x, y = v(2, 3, 4), v(2, 1, 4)

    def build(b, f):
        r = flow.reshape(flow.transpose(b["x"], [2, 0, 1]), [4, -1])
        c = flow.concat([b["x"], b["y"]], axis=1)
        return flow.concat([r, flow.reshape(flow.identity(c), [4, -1])], axis=1)

    def forward(s, f):
        r = s["x"].transpose(2, 0, 1).reshape(4, -1)
        c = np.concatenate([s["x"], s["y"]], axis=1).reshape(4, -1)
        return np.concatenate([r, c], axis=1)

    check({"x": x, "y": y}, build, forward, {}, (4, 6 + 8))


def test_cast_gradient():
    x = v(3, 2)
    feeds = {"weight": RNG.standard_normal((3, 2))}
    got = flowlab_grads({"x": x}, lambda b, f: flow.cast(flow.cast(b["x"], flow.float32), flow.float64) * 2.0, feeds)
    np.testing.assert_allclose(got["x"], 2.0 * feeds["weight"], rtol=1e-6)  # by hand: d(2 cast(x)) = 2


@pytest.mark.parametrize("op, mode, padding, widths, shape", [
    # OneFlow v0.3.4's reflection_pad2d: padding[2] pads the height and padding[3] the width, on both sides.
    (flow.reflection_pad2d, "reflect", [0, 0, 1, 2], ((1, 1), (2, 2)), (1, 2, 5, 8)),
    (flow.zero_pad2d, "constant", [2, 1, 1, 2], ((1, 2), (2, 1)), (1, 2, 6, 7)),  # v0.4.0's [left, right, top, bottom]
])
def test_pads(op, mode, padding, widths, shape):
    x = v(1, 2, 3, 4)
    check({"x": x}, lambda b, f: op(b["x"], padding=padding),
          lambda s, f: np.pad(s["x"], ((0, 0), (0, 0)) + widths, mode=mode), {}, shape)


def test_dense_layer_gradients():
    x = v(5, 3)

    def build(b, f):  # weight (4, 3) all 0.3, bias 0: the forward is known exactly
        return flow.layers.dense(b["x"], 4, activation=flow.math.tanh,
                                 kernel_initializer=flow.constant_initializer(0.3), name="d")

    check({"x": x}, build, lambda s, f: np.tanh(s["x"] @ np.full((4, 3), 0.3).T), {}, (5, 4))


def test_a_missing_gradient_rule_names_the_op():
    from flowlab.errors import CompileError

    @flow.global_function(type="train")
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,))
        loss = flow.math.reduce_sum(flow.cast(flow.math.argmax(flow.reshape(w + x, [1, 3])), flow.float32) + w)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
        return loss

    with pytest.raises(CompileError, match=r"op 'argmax_0' \(argmax\) .* has no gradient rule"):
        job(np.zeros(3, np.float32))
