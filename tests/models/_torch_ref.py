"""Pieces the torch reimplementations of tests/models share, each written from OneFlow v0.3.4's definitions
(kernels named in each docstring), not from flowlab's code."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F


def tensors(values: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """float64 copies of the variables that need gradients (float64: the reference is the exact side)."""
    return {k: torch.tensor(np.asarray(v), dtype=torch.float64, requires_grad=np.issubdtype(np.asarray(v).dtype,
                                                                                             np.floating))
            for k, v in values.items()}


def same_pad(x: torch.Tensor, kernel: int, stride: int, value: float = 0.0) -> torch.Tensor:
    """OneFlow v0.3.4's "SAME" padding of the two spatial axes: nn_ops.py's calc_conv_padding / calc_pool_padding
    turn "SAME" into "SAME_LOWER": out = ceil(in / stride), total padding max((out - 1) * stride + kernel - in, 0),
    the larger half before (operator_util.cpp's GetWindowedOutputSize); TensorFlow puts it after."""
    pads = []
    for size in (x.shape[3], x.shape[2]):  # F.pad wants the last axis first
        out = math.ceil(size / stride)
        total = max((out - 1) * stride + kernel - size, 0)
        pads += [total - total // 2, total // 2]
    return F.pad(x, pads, value=value)


def conv2d_same(x: torch.Tensor, w: torch.Tensor, stride: int, padding: str) -> torch.Tensor:
    if padding == "SAME":
        x = same_pad(x, w.shape[2], stride)
    return F.conv2d(x, w, stride=stride)


def batch_norm_train(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, moving_mean: torch.Tensor,
                     moving_var: torch.Tensor, momentum: float, eps: float) -> tuple[torch.Tensor, torch.Tensor,
                                                                                    torch.Tensor]:
    """A training-mode batch norm over axis 1, as OneFlow v0.3.4's normalization kernel (cuDNN's
    BatchNormalizationForwardTraining): normalizes with the batch's biased variance; the moving variance takes
    the unbiased one (cuDNN's documented Bessel correction), moving = momentum * moving + (1 - momentum) * stat.
    Returns y and the new moving mean / variance."""
    axes = [0] + list(range(2, x.dim()))
    mean = x.mean(dim=axes)
    var = x.var(dim=axes, unbiased=False)
    count = x.numel() // x.shape[1]
    shape = [1, -1] + [1] * (x.dim() - 2)
    y = (x - mean.reshape(shape)) / torch.sqrt(var.reshape(shape) + eps) * gamma.reshape(shape) + beta.reshape(shape)
    with torch.no_grad():
        new_mean = momentum * moving_mean + (1 - momentum) * mean
        new_var = momentum * moving_var + (1 - momentum) * var * count / (count - 1)
    return y, new_mean, new_var


def cosine_lr(base: float, step: int, warmup: int, decay: int) -> float:
    """learning_rate_schedule_kernel.cpp: linear warmup (start multiplier 0) before `warmup` steps, else cosine
    decay of the step itself (not step - warmup); the kernel writes a float."""
    if step < warmup:
        lr = base * (step / warmup)
    else:
        lr = base * 0.5 * (1.0 + math.cos(math.pi * min(step, decay) / decay))
    return float(np.float32(lr))


def polynomial_lr(base: float, step: int, warmup: int, decay: int, end: float, power: float) -> float:
    """learning_rate_schedule_kernel.cpp's PolynomialDecayedLearningRate (cycle=False) after a linear warmup."""
    if step < warmup:
        lr = base * (step / warmup)
    else:
        cur = min(step, decay)
        lr = (base - end) * (1.0 - cur / decay) ** power + end
    return float(np.float32(lr))


def momentum_step(params: dict[str, torch.Tensor], state: dict[str, torch.Tensor], lr: float, beta: float,
                  l2: Callable[[str], float]) -> None:
    """OneFlow's MomentumUpdateFunctor: g = diff + l2 * w; m = beta * m - lr * g; w = w + m."""
    with torch.no_grad():
        for name, p in params.items():
            if p.grad is None:
                continue
            g = p.grad + l2(name) * p
            m = beta * state.get(name, torch.zeros_like(p)) - lr * g
            state[name] = m
            p += m
            p.grad = None


def assert_close(got: np.ndarray, want: torch.Tensor | np.ndarray, what: str, rtol: float = 1e-5) -> float:
    """Relative to the tensor's largest magnitude (a near-zero element has no meaningful relative error);
    returns the error found."""
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    got = np.asarray(got, np.float64).reshape(want.shape)
    scale = max(float(np.max(np.abs(want))), 1e-12)
    err = float(np.max(np.abs(got - want))) / scale
    assert err <= rtol, f"{what}: max |flowlab - torch| / max |torch| = {err:.2e} > {rtol:.0e}"
    return err
