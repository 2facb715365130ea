"""Training: optimizer parity with an independent NumPy reference, schedulers, and accuracy on real digits."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.kernels.reference.optimizer import learning_rate

B, D, H, C = 16, 64, 32, 10
RNG = np.random.default_rng(5)


def mlp_job(optimizer):
    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((B, 1, 8, 8)),
                  labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        flat = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(flat, H, activation=flow.nn.relu, name="hidden")
        logits = flow.layers.dense(hidden, C, name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        optimizer().minimize(loss)
        return loss

    return train_job


def init_weights():
    return {"hidden-weight": RNG.normal(0, 0.1, (H, D)).astype(np.float32), "hidden-bias": np.zeros(H, np.float32),
            "output-weight": RNG.normal(0, 0.1, (C, H)).astype(np.float32), "output-bias": np.zeros(C, np.float32)}


def numpy_grads(w, x, y):
    x = x.reshape(B, -1).astype(np.float64)
    pre = x @ w["hidden-weight"].T + w["hidden-bias"]
    h = np.maximum(pre, 0)
    logits = h @ w["output-weight"].T + w["output-bias"]
    e = np.exp(logits - logits.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    loss = -np.log(p[np.arange(B), y])
    d = p.copy()
    d[np.arange(B), y] -= 1
    d /= B  # variable gradients are divided by the loss element count (OneFlow)
    dh = d @ w["output-weight"] * (pre > 0)
    return loss, {"hidden-weight": dh.T @ x, "hidden-bias": dh.sum(0), "output-weight": d.T @ h,
                  "output-bias": d.sum(0)}


def run_parity(optimizer, update, steps=5):
    job = mlp_job(optimizer)
    w0 = init_weights()
    flow.load_variables(w0)
    ref = {k: v.astype(np.float64) for k, v in w0.items()}
    state: dict = {}
    for step in range(steps):
        x = RNG.random((B, 1, 8, 8)).astype(np.float32)
        y = RNG.integers(0, C, B).astype(np.int32)
        loss = job(x, y)
        ref_loss, grads = numpy_grads(ref, x, y)
        np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
        for name in ref:
            ref[name] = update(name, ref[name], grads[name], step, state)
    got = flow.get_all_variables()
    for name in ref:
        scale = np.abs(ref[name]).max()
        assert np.abs(got[name] - ref[name]).max() <= 1e-5 * scale, name


def test_sgd_momentum_parity_with_numpy():
    lr, beta = 0.1, 0.9

    def update(name, w, g, step, state):  # OneFlow: v = beta v - lr g; w += v
        v = state.get(name, 0.0) * beta - lr * g
        state[name] = v
        return w + v

    run_parity(lambda: flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [lr]), momentum=beta),
               update)
    assert sorted(k for k in flow.get_all_variables() if k.endswith("-momentum")) == [
        "hidden-bias-momentum", "hidden-weight-momentum", "output-bias-momentum", "output-weight-momentum"]


def test_plain_sgd_parity_with_numpy():
    run_parity(lambda: flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0),
               lambda name, w, g, step, state: w - 0.5 * g)


@pytest.mark.parametrize("bias_correction", [False, True])
def test_adam_parity_with_numpy(bias_correction):
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8

    def update(name, w, g, step, state):
        m = b1 * state.get((name, "m"), 0.0) + (1 - b1) * g
        v = b2 * state.get((name, "v"), 0.0) + (1 - b2) * g * g
        state[(name, "m")], state[(name, "v")] = m, v
        rate = lr * math.sqrt(1 - b2 ** (step + 1)) / (1 - b1 ** (step + 1)) if bias_correction else lr
        return w - rate * m / (np.sqrt(v) + eps)

    run_parity(lambda: flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [lr]),
                                           do_bias_correction=bias_correction), update)


def test_train_step_counts_runs_and_drives_the_schedule():
    job = mlp_job(lambda: flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([2], [0.1, 0.01]),
                                             momentum=0))
    x, y = RNG.random((B, 1, 8, 8)).astype(np.float32), RNG.integers(0, C, B).astype(np.int32)
    for _ in range(4):
        job(x, y)
    assert flow.get_all_variables()["System-Train-TrainStep-train_job"].tolist() == [4]
    assert [learning_rate(0.1, s, {"type": "piecewise_constant", "boundaries": [2], "values": [0.1, 0.01]}, None)
            for s in range(4)] == [0.1, 0.1, 0.1, 0.01]  # OneFlow: step <= boundary keeps the earlier value


def test_schedulers_by_hand():
    poly = flow.optimizer.PolynomialScheduler(1.0, 10, end_learning_rate=0.0, power=2.0).conf
    assert learning_rate(1.0, 5, poly["decay"], None) == pytest.approx(0.25)
    cos = flow.optimizer.CosineScheduler(1.0, 10, alpha=0.0).conf
    assert learning_rate(1.0, 5, cos["decay"], None) == pytest.approx(0.5)
    assert learning_rate(1.0, 20, cos["decay"], None) == pytest.approx(0.0, abs=1e-12)
    warm = flow.optimizer.CustomScheduler(2.0, warmup=flow.optimizer.warmup.linear(4, 0.5)).conf
    assert [learning_rate(2.0, s, None, warm["warmup"]) for s in (0, 2, 4)] == [1.0, 1.5, 2.0]
    const = flow.optimizer.CustomScheduler(2.0, warmup=flow.optimizer.warmup.constant(3, 0.1)).conf
    assert learning_rate(2.0, 1, None, const["warmup"]) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="len\\(values\\) == len\\(boundaries\\) \\+ 1"):
        flow.optimizer.PiecewiseConstantScheduler([1, 2], [0.1])


def test_minimize_errors():
    from flowlab.errors import CompileError, OpInferError

    @flow.global_function(type="train")
    def no_minimize(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return x + flow.get_variable("w", shape=(3,))

    with pytest.raises(CompileError, match="has no optimizer: call e.g. flow.optimizer.SGD"):
        no_minimize(np.zeros(3, np.float32))
    flow.clear_default_session()

    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        loss = x + flow.get_variable("w", shape=(3,))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
        return loss

    with pytest.raises(OpInferError, match="minimize\\(\\) is for train jobs"):
        predict(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="unexpected keyword argument 'lr'"):
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), lr=0.1)
    with pytest.raises(TypeError, match="needs an lr scheduler"):
        flow.optimizer.SGD(0.1)


def test_mlp_reaches_90_percent_on_digits():
    (train_x, train_y), (test_x, test_y) = flow.data.load_digits(batch_size=B)

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((B, 1, 8, 8)),
                  labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Callback[tp.Numpy]:
        initializer = flow.truncated_normal(0.1)
        flat = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(flat, 64, activation=flow.nn.relu, kernel_initializer=initializer, name="hidden")
        logits = flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    @flow.global_function()
    def eval_job(images: tp.Numpy.Placeholder((B, 1, 8, 8))) -> tp.Numpy:
        flat = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(flat, 64, activation=flow.nn.relu, name="hidden")
        return flow.math.argmax(flow.layers.dense(hidden, 10, name="output"))

    losses: list[float] = []
    for _epoch in range(5):
        for x, y in zip(train_x, train_y):
            train_job(x, y)(lambda loss: losses.append(float(loss.mean())))
    accuracy = np.mean([np.mean(eval_job(x) == y) for x, y in zip(test_x, test_y)])
    assert np.mean(losses[-20:]) < np.mean(losses[:20]) / 4
    assert accuracy >= 0.90, accuracy


def test_l2_regularizer_and_global_norm_clipping_by_hand():
    """One SGD step (lr 1) on loss = sum(w * x): the gradient is x; OneFlow's regularizer adds l1*sign(w) + l2*w
    (its L1L2RegularizeGradient kernel); clipping scales the gradient to the global norm."""
    x = np.array([3.0, 4.0], np.float32)  # |x| = 5
    w0 = np.array([1.0, -2.0], np.float32)

    def run(regularizer, clip):
        flow.clear_default_session()

        @flow.global_function(type="train")
        def job(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
            w = flow.get_variable("w", shape=(2,), regularizer=regularizer)
            loss = flow.math.reduce_sum(w * x)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0,
                               grad_clipping=clip).minimize(loss)
            return loss

        flow.load_variables({"w": w0})
        job(x)
        return w0 - flow.get_all_variables()["w"]

    np.testing.assert_allclose(run(None, None), x, rtol=1e-6)
    np.testing.assert_allclose(run(flow.regularizers.l2(0.5), None), x + 0.5 * w0, rtol=1e-6)
    np.testing.assert_allclose(run(flow.regularizers.l1(0.1), None), x + 0.1 * np.sign(w0), rtol=1e-6)
    np.testing.assert_allclose(run(flow.regularizers.l1_l2(0.1, 0.5), None), x + 0.1 * np.sign(w0) + 0.5 * w0,
                               rtol=1e-6)
    np.testing.assert_allclose(run(None, flow.optimizer.grad_clipping.by_global_norm(1.0)), x / 5, rtol=1e-6)
    np.testing.assert_allclose(run(None, flow.optimizer.grad_clipping.by_global_norm(10.0)), x, rtol=1e-6)


def test_rmsprop_parity_with_numpy():
    lr, decay, eps = 0.01, 0.9, 1e-8

    def update(name, w, g, step, state):  # OneFlow: ms = d ms + (1-d) g^2; w -= lr g / sqrt(ms + eps)
        ms = decay * state.get(name, 0.0) + (1 - decay) * g * g
        state[name] = ms
        return w - lr * g / np.sqrt(ms + eps)

    run_parity(lambda: flow.optimizer.RMSProp(flow.optimizer.PiecewiseConstantScheduler([], [lr]),
                                              decay_rate=decay, epsilon=eps), update)


def test_adamw_parity_with_numpy():
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.1

    def update(name, w, g, step, state):  # Adam plus decoupled decay: w -= lr (m / (sqrt(v) + eps) + wd w)
        m = b1 * state.get((name, "m"), 0.0) + (1 - b1) * g
        v = b2 * state.get((name, "v"), 0.0) + (1 - b2) * g * g
        state[(name, "m")], state[(name, "v")] = m, v
        return w - lr * (m / (np.sqrt(v) + eps) + wd * w)

    run_parity(lambda: flow.optimizer.AdamW(flow.optimizer.PiecewiseConstantScheduler([], [lr]), weight_decay=wd),
               update)
