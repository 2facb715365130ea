"""The failure-semantics harness (tests/runtime/test_failure_semantics*.py and the tests that fail calls the same way):
a small training job, its batches, a kernel that fails late in a call, and the comparison of variables."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp
from flowlab.kernels import registry

B, D, C = 6, 5, 3


RNG = np.random.default_rng(11)


BATCHES = [(RNG.standard_normal((B, D)).astype(np.float32), RNG.integers(0, C, B).astype(np.int32))
           for _ in range(12)]


def define_train(optimizer: str = "adam"):
    """A two-layer classifier whose step updates several variables, optimizer state and the step counter."""

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((B, D)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, 7, activation=flow.nn.relu, kernel_initializer=flow.random_normal_initializer(),
                              name="hidden")
        logits = flow.layers.dense(h, C, kernel_initializer=flow.random_normal_initializer(), name="out")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        schedule = flow.optimizer.PiecewiseConstantScheduler([], [0.05])
        opt = flow.optimizer.Adam(schedule) if optimizer == "adam" else flow.optimizer.SGD(schedule, momentum=0.9)
        opt.minimize(loss)
        return loss

    return train_job


def assert_same_variables(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def failing_late(monkeypatch, op_type: str):
    """Make ``op_type``'s kernel raise, when armed, at its last act of a call (after its other acts updated
    their variables): as late in the step as a kernel can fail."""
    monkeypatch.setenv("FLOWLAB_KERNELS", "numba")  # one implementation patched: the run uses only it
    impl = "numba"
    factory = registry.get_kernel_factory(op_type, impl)
    state = {"armed": False, "acts": 0, "per_call": 0}

    def patched(ctx):
        kernel = factory(ctx)

        def maybe_failing(ins, outs):
            state["acts"] += 1
            if state["armed"] and state["acts"] == state["per_call"]:
                raise OSError("simulated failure of the last update")
            kernel(ins, outs)

        return maybe_failing

    monkeypatch.setitem(registry._KERNELS, (op_type, impl, "cpu"), patched)
    return state
