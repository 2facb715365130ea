"""benchmarks/_ideal_step.py: the hand-written data-parallel step that flowlab's 2-device ratio is measured against
must compute the same training as the one-thread step (else its speed says nothing), with both threads' replicas
equal after the all-gather, and the one-thread step must match a NumPy reference of the math."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "_ideal_step.py"


@pytest.fixture(scope="module")
def ideal():
    spec = importlib.util.spec_from_file_location("_ideal_step", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def numpy_steps(params, x, y, steps, lr=0.1, beta=0.9):
    """The MLP's SGD-with-momentum steps in float64 NumPy: mean softmax cross-entropy, v = beta v - lr g, w += v."""
    w1, b1, w2, b2 = (p.astype(np.float64) for p in params)
    vel = [np.zeros_like(p) for p in (w1, b1, w2, b2)]
    losses = []
    for _ in range(steps):
        h = np.maximum(x @ w1.T + b1, 0)
        logits = h @ w2.T + b2
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        losses.append(-np.log(p[np.arange(len(y)), y]).sum())
        dl = p.copy()
        dl[np.arange(len(y)), y] -= 1
        dl /= len(y)
        dh = (dl @ w2) * (h > 0)
        grads = (dh.T @ x, dh.sum(0), dl.T @ h, dl.sum(0))
        for k, (w, g) in enumerate(zip((w1, b1, w2, b2), grads)):
            vel[k] = beta * vel[k] - lr * g
            w += vel[k]
    return [w1, b1, w2, b2], losses


def test_one_thread_step_matches_numpy(ideal):
    params, x, y = ideal.initial()
    rep = ideal.Replica(params, 200)
    ideal.one_thread_steps(rep, x, y, 3)
    expect, losses = numpy_steps(params, x, y, 3)
    assert rep.loss == pytest.approx(losses[-1], rel=1e-4)
    for got, want in zip(rep.params, expect):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_two_threads_equal_one_thread_and_each_other(ideal):
    params, x, y = ideal.initial()
    one, pair = ideal.Replica(params, 200), [ideal.Replica(params, 100), ideal.Replica(params, 100)]
    ideal.one_thread_steps(one, x, y, 4)
    cpu = ideal.two_thread_steps(pair, x, y, 4)
    assert len(cpu) == 2 and all(c["cpu"] >= sum(c[p] for p in ideal.PHASES) > 0 for c in cpu)
    for a, b in zip(pair[0].params, pair[1].params):
        np.testing.assert_array_equal(a, b)  # the all-gather left both replicas bit-identical
    for got, want in zip(pair[0].params, one.params):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)  # only the half-batch sums' rounding differs
    assert pair[0].loss + pair[1].loss == pytest.approx(one.loss, rel=1e-4)


def test_the_plan_shaped_exchange_computes_the_same_bits(ideal):
    """The exchange shaped as the Plan's boxing (add into a buffer, update, copy both halves) is the least
    exchange's arithmetic in another order of memory passes: the same weights, bit for bit."""
    params, x, y = ideal.initial()
    least, shaped = ([ideal.Replica(params, 100), ideal.Replica(params, 100)] for _ in range(2))
    ideal.two_thread_steps(least, x, y, 3)
    ideal.two_thread_steps(shaped, x, y, 3, plan_shaped=True)
    for rank in range(2):
        for a, b in zip(least[rank].params, shaped[rank].params):
            np.testing.assert_array_equal(a, b)
        rows = slice(rank * ideal.HIDDEN // 2, (rank + 1) * ideal.HIDDEN // 2)
        np.testing.assert_array_equal(shaped[rank].own, least[rank].params[0][rows])
