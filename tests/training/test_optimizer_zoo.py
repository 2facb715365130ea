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


def _np_rmsprop(w, g, steps, lr, decay, eps, centered):
    ms, mg = np.zeros_like(w), np.zeros_like(w)
    for _ in range(steps):  # OneFlow's RmsPropUpdateFunctor (model_update_kernel_util.h)
        ms = (1 - decay) * g * g + decay * ms
        denom = ms
        if centered:
            mg = (1 - decay) * g + decay * mg
            denom = ms - mg * mg
        w = w - lr * g / np.sqrt(denom + eps)
    return w


@pytest.mark.parametrize("impl", ["reference", "numba"])
@pytest.mark.parametrize("centered", [True, False])
def test_rmsprop_centered_over_several_steps(impl, centered, monkeypatch):
    monkeypatch.setenv("FLOWLAB_KERNELS", impl)
    x = RNG.standard_normal((3, 4))
    init = {n: RNG.standard_normal(4) for n in NAMES}
    lr, decay, eps = 0.01, 0.9, 1e-3
    after = _train(lambda: flow.optimizer.RMSProp(flow.optimizer.PiecewiseConstantScheduler([], [lr]),
                                                  decay_rate=decay, epsilon=eps, centered=centered), 4, x, init)
    for i, name in enumerate(NAMES):
        want = _np_rmsprop(init[name], x[i], 4, float(np.float32(lr)), decay, eps, centered)
        np.testing.assert_allclose(after[name], want, rtol=1e-12, err_msg=name)
    slots = {op.name for op in flow.default_session().job_set.job("train_job").ops if op.op_type == "variable"}
    assert ("dense-weight-mean_gradient" in slots) == centered
    assert "dense-weight-mean_square" in slots


@pytest.mark.parametrize("impl", ["reference", "numba"])
def test_centered_rmsprop_kernel_one_act(impl):
    from tests.ops.helpers import run_op

    w, g, ms, mg = (RNG.standard_normal((2, 5)) for _ in range(4))
    ms = np.abs(ms) + 1
    arrays = {"model": [w.copy()], "model_diff": [g], "mean_square": [ms.copy()],
              "learning_rate": [np.array([0.5], np.float32)], "mean_gradient": [mg.copy()]}
    run_op("rmsprop_update", arrays, {"centered": True, "decay_rate": 0.8, "epsilon": 0.1, "scale": 2.0}, impl)
    ms2, mg2 = 0.8 * ms + 0.2 * (2 * g) ** 2, 0.8 * mg + 0.2 * (2 * g)
    np.testing.assert_allclose(arrays["mean_square"][0], ms2, rtol=1e-13)
    np.testing.assert_allclose(arrays["mean_gradient"][0], mg2, rtol=1e-13)
    np.testing.assert_allclose(arrays["model"][0], w - 0.5 * 2 * g / np.sqrt(ms2 - mg2 * mg2 + 0.1), rtol=1e-13)


def _np_lamb(w, g, steps, lr, b1=0.9, b2=0.999, eps=1e-6):
    m, v, b1t, b2t = np.zeros_like(w), np.zeros_like(w), b1, b2
    for _ in range(steps):  # OneFlow's LambUpdateKernelUtil, beta^t advanced first (slots start at beta)
        b1t, b2t = b1t * b1, b2t * b2
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        adam = (m / (1 - b1t)) / np.sqrt(v / (1 - b2t) + eps)
        w_norm, a_norm = np.linalg.norm(w), np.linalg.norm(adam)
        trust = w_norm / a_norm if w_norm > 0 and a_norm > 0 else 1.0
        w = w - lr * trust * adam
    return w


@pytest.mark.parametrize("impl", ["reference", "numba"])
def test_lamb_over_several_steps(impl, monkeypatch):
    monkeypatch.setenv("FLOWLAB_KERNELS", impl)
    x = RNG.standard_normal((3, 4))
    init = {n: RNG.standard_normal(4) for n in NAMES}
    init["dense-bias"] = np.zeros(4)  # ||w|| = 0 on the first step: trust ratio 1
    after = _train(lambda: flow.optimizer.LAMB(flow.optimizer.PiecewiseConstantScheduler([], [0.01])), 3, x, init)
    for i, name in enumerate(NAMES):
        want = _np_lamb(init[name], x[i], 3, float(np.float32(0.01)))
        np.testing.assert_allclose(after[name], want, rtol=1e-12, atol=1e-15, err_msg=name)
    variables = flow.get_all_variables()
    np.testing.assert_allclose(variables["dense-weight-beta1_t"], [0.9**4], rtol=1e-12)  # 3 steps from beta1


def _np_lars(w, g, steps, lr, beta=0.9, eps=1e-9, coef=1e-4, wd=0.0):
    mom = np.zeros_like(w)
    for step in range(steps):  # LarsUpdateKernelUtil: rms norms, the decay term in the denominator after step 0
        w_norm, g_norm = np.sqrt(np.mean(w * w)), np.sqrt(np.mean(g * g))
        local = lr * coef * w_norm / (eps + g_norm + (wd * w_norm if step else 0.0))
        mom = beta * mom - local * (g + wd * w)
        w = w + mom
    return w


@pytest.mark.parametrize("impl", ["reference", "numba"])
def test_lars_over_several_steps(impl, monkeypatch):
    monkeypatch.setenv("FLOWLAB_KERNELS", impl)
    x = RNG.standard_normal((3, 4))
    init = {n: RNG.standard_normal(4) for n in NAMES}
    after = _train(lambda: flow.optimizer.LARS(flow.optimizer.PiecewiseConstantScheduler([], [0.5]),
                                               momentum_beta=0.8, lars_coefficient=0.3), 3, x, init)
    for i, name in enumerate(NAMES):
        want = _np_lars(init[name], x[i], 3, 0.5, beta=0.8, coef=0.3)
        np.testing.assert_allclose(after[name], want, rtol=1e-12, atol=1e-15, err_msg=name)
    assert "dense-weight-momentum" in flow.get_all_variables()


def test_lars_kernel_weight_decay_after_the_first_step():
    """The decay term joins the local rate's denominator only when train_step != 0 (OneFlow's kernel)."""
    from tests.ops.helpers import run_op

    w, g, mom = RNG.standard_normal(6), RNG.standard_normal(6), RNG.standard_normal(6)
    attrs = {"weight_decay": 0.3, "scale": 0.5, "l1": 0.0, "l2": 0.1, "momentum_beta": 0.9, "epsilon": 1e-9,
             "lars_coefficient": 0.2}
    for impl in ("reference", "numba"):
        for step in (0, 4):
            arrays = {"model": [w.copy()], "model_diff": [g.copy()], "learning_rate": [np.array([0.7])],
                      "train_step": [np.array([step], np.int64)], "momentum": [mom.copy()]}
            run_op("lars_update", arrays, attrs, impl)
            geff = 0.5 * g + 0.1 * w
            wn, gn = np.sqrt(np.mean(w * w)), np.sqrt(np.mean(geff * geff))
            local = 0.7 * 0.2 * wn / (1e-9 + gn + (0.3 * wn if step else 0.0))
            m2 = 0.9 * mom - local * (geff + 0.3 * w)
            np.testing.assert_allclose(arrays["momentum"][0], m2, rtol=1e-13, err_msg=f"{impl} step {step}")
            np.testing.assert_allclose(arrays["model"][0], w + m2, rtol=1e-13, err_msg=f"{impl} step {step}")
