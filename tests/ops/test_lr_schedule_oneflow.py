"""The learning-rate schedules against OneFlow v0.3.4's kernel transcribed in float64 (oneflow_lr.py): both CPU
kernels at every step, the schedulers' confs, and one training job per scheduler checking the applied update.

What the transcription pins: the decay sees the global train step after a warmup (flowlab subtracted the warmup
steps), a cyclic polynomial decay treats step 0 as step 1, and the four decays flowlab lacked (piecewise scaling,
exponential, inverse time, natural exp)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

from .helpers import op_kernel
from .oneflow_lr import DECAYS, STEPS, WARMUPS, oneflow_lr, schedule_id

BASE = 0.1


@pytest.mark.parametrize("impl", ["reference", "numba"])
@pytest.mark.parametrize(("decay", "warmup"), list(itertools.product(DECAYS, WARMUPS)), ids=schedule_id)
def test_kernel_matches_oneflow_at_every_step(impl, decay, warmup):
    attrs = {"learning_rate": BASE, "decay": decay, "warmup": warmup}
    kernel, _ins, outs = op_kernel("learning_rate_schedule", {"train_step": [np.zeros(1, np.int64)]}, attrs, impl)
    for step in STEPS:
        kernel([np.array([step], np.int64)], outs)
        want = oneflow_lr(BASE, step, decay, warmup)
        np.testing.assert_array_max_ulp(outs[0][0], want, maxulp=1)


def test_bert_polynomial_after_warmup_decays_from_the_global_step():
    # BERT's util.py: PolynomialSchduler(lr, iter_num, 0.0, warmup=linear(iter_num // 10, 0)); at step 20 of 100
    # OneFlow gives lr * (1 - 20/100), not lr * (1 - 10/100) (1.11x larger, what flowlab gave)
    decay = {"type": "polynomial", "decay_batches": 100, "end_learning_rate": 0.0, "power": 1.0, "cycle": False}
    warmup = {"type": "linear", "warmup_batches": 10, "start_multiplier": 0.0}
    kernel, _ins, outs = op_kernel("learning_rate_schedule", {"train_step": [np.zeros(1, np.int64)]},
                                   {"learning_rate": 1e-4, "decay": decay, "warmup": warmup}, "numba")
    kernel([np.array([20], np.int64)], outs)
    np.testing.assert_allclose(outs[0][0], 1e-4 * 0.8, rtol=1e-6)


def test_cyclic_polynomial_at_step_0_is_step_1():
    decay = {"type": "polynomial", "decay_batches": 4, "end_learning_rate": 0.0, "power": 1.0, "cycle": True}
    for impl in ("reference", "numba"):
        kernel, _ins, outs = op_kernel("learning_rate_schedule", {"train_step": [np.zeros(1, np.int64)]},
                                       {"learning_rate": 1.0, "decay": decay, "warmup": None}, impl)
        kernel([np.zeros(1, np.int64)], outs)
        assert outs[0][0] == np.float32(0.75), impl  # (1 - 1/4)^1, as at step 1


def test_scheduler_confs():
    warm = flow.optimizer.warmup.linear(2, 0.5)
    assert flow.optimizer.ExponentialScheduler(0.1, 4, 0.5, staircase=True, warmup=warm).conf == {
        "base_lr": 0.1, "warmup": {"type": "linear", "warmup_batches": 2, "start_multiplier": 0.5},
        "decay": {"type": "exponential", "decay_batches": 4, "decay_rate": 0.5, "staircase": True}}
    assert flow.optimizer.InverseTimeScheduler(0.1, 3, 0.9).conf["decay"] == {
        "type": "inverse_time", "decay_batches": 3, "decay_rate": 0.9, "staircase": False}
    assert flow.optimizer.NaturalExpScheduler(0.1, 5, 0.3).conf["decay"] == {
        "type": "natural_exp", "decay_batches": 5, "decay_rate": 0.3, "staircase": False}
    # OneFlow: a scalar scale repeats per boundary; the first segment keeps the base rate (scale 1)
    assert flow.optimizer.PiecewiseScalingScheduler(0.1, [5, 10], 0.5).conf["decay"] == {
        "type": "piecewise_scaling", "boundaries": [5, 10], "scales": [1.0, 0.5, 0.5]}
    assert flow.optimizer.PiecewiseScalingScheduler(0.1, [5, 10], [0.5, 0.1]).conf["decay"]["scales"] == [1.0, 0.5,
                                                                                                          0.1]
    with pytest.raises(ValueError, match="2 boundaries.*1 scale"):
        flow.optimizer.PiecewiseScalingScheduler(0.1, [5, 10], [0.5])
    with pytest.warns(FutureWarning, match="PolynomialSchduler.*PolynomialScheduler"):
        alias = flow.optimizer.PolynomialSchduler(0.1, 10, 0.0, warmup=warm)
    assert isinstance(alias, flow.optimizer.PolynomialScheduler)
    assert alias.conf == flow.optimizer.PolynomialScheduler(0.1, 10, 0.0, warmup=warm).conf
    with pytest.raises(ValueError, match="steps"):
        flow.optimizer.ExponentialScheduler(0.1, 0, 0.5)


SCHEDULERS = {
    "piecewise_scaling": (lambda w: flow.optimizer.PiecewiseScalingScheduler(BASE, [3, 5], [0.5, 0.1], warmup=w),
                          {"type": "piecewise_scaling", "boundaries": [3, 5], "scales": [1.0, 0.5, 0.1]}),
    "exponential": (lambda w: flow.optimizer.ExponentialScheduler(BASE, 3, 0.5, warmup=w),
                    {"type": "exponential", "decay_batches": 3, "decay_rate": 0.5, "staircase": False}),
    "inverse_time": (lambda w: flow.optimizer.InverseTimeScheduler(BASE, 2, 0.9, staircase=True, warmup=w),
                     {"type": "inverse_time", "decay_batches": 2, "decay_rate": 0.9, "staircase": True}),
    "natural_exp": (lambda w: flow.optimizer.NaturalExpScheduler(BASE, 4, 0.3, warmup=w),
                    {"type": "natural_exp", "decay_batches": 4, "decay_rate": 0.3, "staircase": False}),
    "polynomial_alias": (lambda w: flow.optimizer.PolynomialSchduler(BASE, 6, 0.0, warmup=w),
                         {"type": "polynomial", "decay_batches": 6, "end_learning_rate": 0.0, "power": 1.0,
                          "cycle": False}),
}


@pytest.mark.filterwarnings("ignore:.*PolynomialSchduler:FutureWarning")
@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_training_applies_oneflows_learning_rate(name):
    make, decay = SCHEDULERS[name]
    warmup = {"type": "linear", "warmup_batches": 2, "start_multiplier": 0.25}
    grad = np.array([1.0, -2.0, 0.5])

    @flow.global_function(type="train")
    def train(c: tp.Numpy.Placeholder((3,), dtype=flow.float64)) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,), dtype=flow.float64, initializer=flow.zeros_initializer())
        loss = flow.math.reduce_sum(w * c)  # d(loss)/dw = c
        flow.optimizer.SGD(make(flow.optimizer.warmup.linear(2, 0.25)), momentum=0).minimize(loss)
        return loss

    w = np.zeros(3)
    for step in range(8):
        train(grad)
        w = w - np.float64(oneflow_lr(BASE, step, decay, warmup)) * grad  # the float32 rate, applied in float64
        np.testing.assert_allclose(flow.get_all_variables()["w"], w, rtol=1e-12, atol=1e-15, err_msg=f"step {step}")
