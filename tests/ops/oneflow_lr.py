"""OneFlow v0.3.4's learning_rate_schedule kernel (core/kernel/learning_rate_schedule_kernel.cpp), transcribed
line by line in float64 as the independent reference of the schedule tests (CPU and CUDA)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def oneflow_lr(base: float, step: int, decay: dict[str, Any] | None, warmup: dict[str, Any] | None) -> np.float32:
    lr = float(np.float32(base))  # `float learning_rate = conf.learning_rate();`
    if warmup and step < warmup["warmup_batches"]:  # TriggerWarmup
        if warmup["type"] == "constant":
            return np.float32(lr * warmup["multiplier"])
        start = warmup["start_multiplier"]
        return np.float32(lr * (start + (1.0 - start) * (step * 1.0 / warmup["warmup_batches"])))
    if not decay:
        return np.float32(lr)
    kind, cur = decay["type"], float(step)  # the decay sees the global train step, warmup or not
    if kind in ("exponential", "inverse_time", "natural_exp"):
        p = cur / float(decay["decay_batches"])
        if decay["staircase"]:
            p = math.floor(p)
        rate = decay["decay_rate"]
        return np.float32({"exponential": lambda: lr * math.pow(rate, p),
                           "inverse_time": lambda: lr / (1.0 + rate * p),
                           "natural_exp": lambda: lr * math.exp(-rate * p)}[kind]())
    if kind in ("piecewise_constant", "piecewise_scaling"):
        bounds = decay["boundaries"]
        i = 0
        while i < len(bounds) and not step <= bounds[i]:
            i += 1
        return np.float32(decay["values"][i] if kind == "piecewise_constant" else decay["scales"][i] * lr)
    batches = float(decay["decay_batches"])
    if kind == "polynomial":
        if decay["cycle"]:
            if step == 0:
                cur = 1.0
            batches = batches * math.ceil(cur / batches)
        else:
            cur = min(cur, batches)
        end = decay["end_learning_rate"]
        return np.float32((lr - end) * math.pow(1.0 - (cur / batches), decay["power"]) + end)
    pi = math.atan(1.0) * 4.0
    cur = min(cur, batches)
    if kind == "cosine":
        return np.float32(lr * ((1.0 - decay["alpha"]) * (0.5 * (1.0 + math.cos(pi * cur / batches))) + decay["alpha"]))
    assert kind == "linear_cosine", kind
    linear = (batches - cur) / batches
    cosine = 0.5 * (1.0 + math.cos(pi * 2.0 * decay["num_periods"] * cur / batches))
    return np.float32(lr * ((decay["alpha"] + linear) * cosine + decay["beta"]))


DECAYS = [
    None,
    {"type": "piecewise_constant", "boundaries": [3, 7], "values": [0.1, 0.01, 0.001]},
    {"type": "piecewise_scaling", "boundaries": [3, 7], "scales": [1.0, 0.5, 0.1]},
    {"type": "polynomial", "decay_batches": 5, "end_learning_rate": 0.001, "power": 2.0, "cycle": False},
    {"type": "polynomial", "decay_batches": 5, "end_learning_rate": 0.001, "power": 1.0, "cycle": True},
    {"type": "polynomial", "decay_batches": 4, "end_learning_rate": 0.0, "power": 0.5, "cycle": True},
    {"type": "cosine", "decay_batches": 6, "alpha": 0.1},
    {"type": "linear_cosine", "decay_batches": 6, "num_periods": 0.5, "alpha": 0.0, "beta": 0.001},
    {"type": "exponential", "decay_batches": 4, "decay_rate": 0.5, "staircase": False},
    {"type": "exponential", "decay_batches": 4, "decay_rate": 0.5, "staircase": True},
    {"type": "inverse_time", "decay_batches": 3, "decay_rate": 0.9, "staircase": False},
    {"type": "inverse_time", "decay_batches": 3, "decay_rate": 0.9, "staircase": True},
    {"type": "natural_exp", "decay_batches": 5, "decay_rate": 0.3, "staircase": False},
    {"type": "natural_exp", "decay_batches": 5, "decay_rate": 0.3, "staircase": True},
]
WARMUPS = [None, {"type": "linear", "warmup_batches": 3, "start_multiplier": 0.2},
           {"type": "linear", "warmup_batches": 4, "start_multiplier": 0.0},
           {"type": "constant", "warmup_batches": 2, "multiplier": 0.5}]
STEPS = range(20)  # across the warmups, the boundaries, the decays' ends and two polynomial cycles


def schedule_id(value: Any) -> str:
    if not value:
        return "none"
    extra = "-cycle" if value.get("cycle") else "-stair" if value.get("staircase") else ""
    return f"{value['type']}{extra}"
