"""Weight decay in the update kernels against NumPy float64 transcriptions of OneFlow v0.3.4's functors
(oneflow/user/kernels/model_update_kernel_util.h), as cases that tests/training/test_weight_decay_kernels.py (CPU tiers)
and tests/cuda/test_weight_decay_gpu.py (the CUDA kernels) run:
SGDUpdateFunctor w -= lr (g + wd w); MomentumUpdateFunctor v = beta v - lr g, w = w + v - lr wd w (the decay
is NOT in the momentum); AdamUpdateFunctor w -= lr (m / (sqrt(v) + eps) + wd w); LambUpdateFunctor
w -= lr trust (adam + wd w); RmsPropUpdateFunctor takes weight_decay and ignores it. g is
CastScaleRegularizeGradientFunctor's scale diff + l1 sign(w) + l2 w.

Of these, OneFlow's Python API reaches a weight decay only through SGDW (momentum_update, or sgd_update with
momentum 0) and AdamW (adam_update); flowlab has AdamW alone, so momentum's and rmsprop's decay are checked on the
kernels directly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

# run(op_type, inputs, attrs): one act of the op's kernel, writing the updated arrays back into ``inputs``
Run = Callable[[str, dict[str, list[np.ndarray]], dict[str, Any]], None]
RNG = np.random.default_rng(11)
LR, WD, SCALE, L1, L2 = 0.5, 0.2, 2.0, 0.01, 0.03
REG = {"weight_decay": WD, "scale": SCALE, "l1": L1, "l2": L2}


def grad(w: np.ndarray, diff: np.ndarray) -> np.ndarray:
    return diff * SCALE + L1 * np.sign(w) + L2 * w  # CastScaleRegularizeGradientFunctor


def arrays(*names: str) -> dict[str, np.ndarray]:
    out = {name: RNG.standard_normal((3, 4)) for name in names}
    for name in ("v", "mean_square"):
        if name in out:
            out[name] = np.abs(out[name]) + 1.0
    return out


def lr() -> list[np.ndarray]:
    return [np.array([LR], np.float32)]




def check_sgd(run: Run) -> None:
    a = arrays("model", "model_diff")
    ins = {"model": [a["model"].copy()], "model_diff": [a["model_diff"]], "learning_rate": lr()}
    run("sgd_update", ins, REG)
    w = a["model"]
    np.testing.assert_allclose(ins["model"][0], w - LR * (grad(w, a["model_diff"]) + WD * w), rtol=1e-12)


def check_momentum_keeps_the_decay_out_of_the_momentum(run: Run) -> None:
    a = arrays("model", "model_diff", "momentum")
    ins = {"model": [a["model"].copy()], "model_diff": [a["model_diff"]], "momentum": [a["momentum"].copy()],
           "learning_rate": lr()}
    run("momentum_update", ins, {**REG, "beta": 0.9})
    w = a["model"]
    v = 0.9 * a["momentum"] - LR * grad(w, a["model_diff"])
    np.testing.assert_allclose(ins["momentum"][0], v, rtol=1e-12)
    np.testing.assert_allclose(ins["model"][0], w + v - LR * WD * w, rtol=1e-12)


def check_adam(run: Run, correct: bool) -> None:
    a = arrays("model", "model_diff", "m", "v")
    ins = {"model": [a["model"].copy()], "model_diff": [a["model_diff"]], "m": [a["m"].copy()], "v": [a["v"].copy()],
           "learning_rate": lr(), "train_step": [np.array([2], np.int64)]}
    b1, b2, eps = 0.9, 0.999, 1e-8
    run("adam_update", ins, {**REG, "beta1": b1, "beta2": b2, "epsilon": eps, "do_bias_correction": correct})
    w, g = a["model"], grad(a["model"], a["model_diff"])
    m, v = b1 * a["m"] + (1 - b1) * g, b2 * a["v"] + (1 - b2) * g * g
    rate = LR * np.sqrt(1 - b2**3) / (1 - b1**3) if correct else LR  # AdamBiasCorrectionLearningRate, t = step + 1
    np.testing.assert_allclose(ins["model"][0], w - rate * (m / (np.sqrt(v) + eps) + WD * w), rtol=1e-12)


def check_rmsprop_ignores_weight_decay(run: Run, centered: bool) -> None:
    a = arrays("model", "model_diff", "mean_square", "mean_gradient")
    a["mean_gradient"] *= 0.1  # keeps ms - mg^2 positive
    ins = {"model": [a["model"].copy()], "model_diff": [a["model_diff"]], "mean_square": [a["mean_square"].copy()],
           "learning_rate": lr()}
    if centered:
        ins["mean_gradient"] = [a["mean_gradient"].copy()]
    d, eps = 0.8, 0.1
    run("rmsprop_update", ins, {**REG, "decay_rate": d, "epsilon": eps, "centered": centered})
    w, g = a["model"], grad(a["model"], a["model_diff"])
    ms = (1 - d) * g * g + d * a["mean_square"]
    denom = ms
    if centered:
        mg = (1 - d) * g + d * a["mean_gradient"]
        denom = ms - mg * mg
        np.testing.assert_allclose(ins["mean_gradient"][0], mg, rtol=1e-12)
    np.testing.assert_allclose(ins["mean_square"][0], ms, rtol=1e-12)
    np.testing.assert_allclose(ins["model"][0], w - LR * g / np.sqrt(denom + eps), rtol=1e-12)


def check_lamb(run: Run) -> None:
    a = arrays("model", "model_diff", "m", "v")
    b1, b2, eps = 0.9, 0.999, 1e-6
    ins = {"model": [a["model"].copy()], "model_diff": [a["model_diff"]], "m": [a["m"].copy()], "v": [a["v"].copy()],
           "beta1_t": [np.array([b1])], "beta2_t": [np.array([b2])], "learning_rate": lr()}
    run("lamb_update", ins, {**REG, "beta1": b1, "beta2": b2, "epsilon": eps})
    w, g = a["model"], grad(a["model"], a["model_diff"])
    b1t, b2t = b1 * b1, b2 * b2  # LambUpdateKernelUtil advances beta^t first
    m, v = b1 * a["m"] + (1 - b1) * g, b2 * a["v"] + (1 - b2) * g * g
    adam = (m / (1 - b1t)) / np.sqrt(v / (1 - b2t) + eps)
    trust = np.linalg.norm(w) / np.linalg.norm(adam)  # LambLRFunctor: the norms of w and of adam_diff
    np.testing.assert_allclose(ins["model"][0], w - LR * trust * (adam + WD * w), rtol=1e-12)
