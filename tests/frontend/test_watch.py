"""flow.watch and flow.watch_diff: handlers get numpy copies after each run."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import CompileError

RNG = np.random.default_rng(3)


def test_watch_gets_each_runs_value():
    seen = []

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        y = flow.math.relu(x)
        flow.watch(y, seen.append)
        return y * 2.0

    xs = [RNG.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    for x in xs:
        job(x)
    assert len(seen) == 3
    for x, got in zip(xs, seen):
        np.testing.assert_array_equal(got, np.maximum(x, 0))
    assert "System-Watch-relu_0" in {op.name for op in flow.default_session().job_set.job("job").ops}


def test_watch_diff_on_logits_matches_numpy():
    diffs, values = [], []
    B, C = 6, 4

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((B, 5)), labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        logits = flow.layers.dense(x, C, kernel_initializer=flow.random_normal_initializer(), name="out")
        flow.watch(logits, values.append)
        flow.watch_diff(logits, diffs.append)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    x, y = RNG.standard_normal((B, 5)).astype(np.float32), RNG.integers(0, C, B).astype(np.int32)
    train(x, y)
    logits = values[0]
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(B), y] -= 1  # the gradient of the summed loss: not divided by B (OneFlow's seed of ones)
    np.testing.assert_allclose(diffs[0], p, rtol=1e-5, atol=1e-6)
    names = [r.name for r in flow.default_session().passes if r.job_name == "train"]
    # OneFlow's order (JobBuildAndInferCtx::Complete): autograd, the loss split, then the diff watchers
    assert names.index("AddLbiDiffWatcherOpConfs") == names.index("SplitSparseSoftmaxCrossEntropyOpPass") + 1 \
        == names.index("GenerateBackwardAndOptimizerOpConfs") + 2


def test_watch_diff_errors():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,))
        unrelated = x * 2.0
        flow.watch_diff(unrelated, print)
        loss = flow.math.reduce_sum(w * w)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
        return loss

    with pytest.raises(CompileError, match="the loss does not depend on it, so it has no gradient"):
        train(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="needs a callable handler"):
        flow.clear_default_session()

        @flow.global_function()
        def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
            flow.watch(x, "not callable")
            return x

        job(np.zeros(3, np.float32))
