"""OneFlow v0.3.4's optimizer options that its model zoo uses: AdamW(weight_decay_excludes=/includes=) (BERT)
and RMSProp(centered=True): several training steps against NumPy transcriptions of OneFlow's kernels."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

RNG = np.random.default_rng(5)
NAMES = ("dense-weight", "dense-bias", "LayerNorm-gamma")


def _train(optimizer, steps: int, x: np.ndarray, init: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each variable's loss is sum(w * x_i): its gradient is x_i on every step."""
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((3, 4), dtype=flow.float64)) -> tp.Numpy:
        total = None
        for i, name in enumerate(NAMES):
            w = flow.get_variable(name, shape=(4,), dtype=flow.float64)
            part = flow.math.reduce_sum(w * flow.slice(x, [i, 0], [1, 4]))
            total = part if total is None else total + part
        optimizer().minimize(total)
        return total

    flow.load_variables(init)
    for _ in range(steps):
        train_job(x)
    return flow.get_all_variables()


def _np_adamw(w, g, steps, lr, wd, b1=0.9, b2=0.999, eps=1e-8):
    m, v = np.zeros_like(w), np.zeros_like(w)
    for _ in range(steps):  # adam_update's kernel, no bias correction (AdamW's default)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (np.sqrt(v) + eps) + wd * w)
    return w


@pytest.mark.parametrize("filter_kw, decayed", [
    ({"weight_decay_excludes": ["bias", "LayerNorm", "layer_norm"]}, {"dense-weight"}),
    ({"weight_decay_includes": "weight|gamma"}, {"dense-weight", "LayerNorm-gamma"}),
    ({}, set(NAMES)),
])
def test_adamw_decays_only_the_variables_its_patterns_select(filter_kw, decayed):
    x = RNG.standard_normal((3, 4))
    init = {n: RNG.standard_normal(4) for n in NAMES}
    lr, wd = 0.05, 0.3  # the learning rate blob is float32, as OneFlow's
    after = _train(lambda: flow.optimizer.AdamW(flow.optimizer.PiecewiseConstantScheduler([], [lr]),
                                                weight_decay=wd, **filter_kw), 3, x, init)
    for i, name in enumerate(NAMES):
        want = _np_adamw(init[name], x[i], 3, float(np.float32(lr)), wd if name in decayed else 0.0)
        np.testing.assert_allclose(after[name], want, rtol=1e-12, err_msg=name)
    job = flow.default_session().job_set.job("train_job")
    rates = {n: job.op(f"{n}_optimizer").attrs["weight_decay"] for n in NAMES}
    assert rates == {n: wd if n in decayed else 0.0 for n in NAMES}


def test_adamw_filter_errors():
    sched = flow.optimizer.PiecewiseConstantScheduler([], [0.1])
    with pytest.raises(ValueError, match="at most one of weight_decay_includes and weight_decay_excludes"):
        flow.optimizer.AdamW(sched, weight_decay=0.1, weight_decay_includes="a", weight_decay_excludes="b")
    with pytest.raises(ValueError, match=r"weight_decay_excludes: '\(bias' is not a valid regular expression"):
        flow.optimizer.AdamW(sched, weight_decay=0.1, weight_decay_excludes=["(bias"])
