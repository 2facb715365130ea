"""Initializers (``flow.truncated_normal(0.1)``, ...): plain dicts on the variable op, turned into values by
``initialize`` when System-ModelInit runs. Deterministic for a given seed."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ir import DType


def constant_initializer(value: float = 0, dtype: Any = None) -> dict[str, Any]:
    return {"type": "constant", "value": float(value)}


def zeros_initializer(dtype: Any = None) -> dict[str, Any]:
    return constant_initializer(0.0)


def ones_initializer(dtype: Any = None) -> dict[str, Any]:
    return constant_initializer(1.0)


def random_uniform_initializer(minval: float = 0, maxval: float = 1, dtype: Any = None) -> dict[str, Any]:
    if maxval < minval:
        raise ValueError(f"random_uniform_initializer needs minval <= maxval; got {minval} > {maxval}")
    return {"type": "random_uniform", "min": float(minval), "max": float(maxval)}


def random_normal_initializer(mean: float = 0.0, stddev: float = 1.0, seed: int | None = None,
                              dtype: Any = None) -> dict[str, Any]:
    return {"type": "random_normal", "mean": float(mean), "std": float(stddev)}


def truncated_normal_initializer(mean: float = 0.0, stddev: float = 1.0) -> dict[str, Any]:
    return {"type": "truncated_normal", "mean": float(mean), "std": float(stddev)}


def truncated_normal(stddev: float = 1.0) -> dict[str, Any]:
    return truncated_normal_initializer(0.0, stddev)


def xavier_uniform_initializer(data_format: str = "") -> dict[str, Any]:
    return {"type": "xavier_uniform", "data_format": data_format}


def glorot_uniform_initializer(data_format: str = "") -> dict[str, Any]:
    return xavier_uniform_initializer(data_format)


def fans(shape: tuple[int, ...], data_format: str = "") -> tuple[float, float]:
    """(fan_in, fan_out): a dense weight is (units, in); a conv weight (out, in, kh, kw) for NCHW."""
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[1]), float(shape[0])
    if data_format in ("NHWC", "channels_last"):
        receptive = math.prod(shape[1:-1])
        return float(shape[-1] * receptive), float(shape[0] * receptive)
    receptive = math.prod(shape[2:])
    return float(shape[1] * receptive), float(shape[0] * receptive)


def initialize(conf: dict[str, Any], shape: tuple[int, ...], dtype: DType, seed: int) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(seed))
    kind = conf["type"]
    if kind == "constant":
        values = np.full(shape, conf["value"])
    elif kind == "random_uniform":
        values = rng.uniform(conf["min"], conf["max"], shape)
    elif kind == "random_normal":
        values = rng.normal(conf["mean"], conf["std"], shape)
    elif kind == "truncated_normal":  # resample what falls outside two standard deviations, as TF/OneFlow do
        values = rng.normal(0.0, 1.0, shape)
        outside = np.abs(values) > 2.0
        while outside.any():
            values[outside] = rng.normal(0.0, 1.0, int(outside.sum()))
            outside = np.abs(values) > 2.0
        values = conf["mean"] + conf["std"] * values
    elif kind == "xavier_uniform":
        fan_in, fan_out = fans(tuple(shape), conf.get("data_format", ""))
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        values = rng.uniform(-limit, limit, shape)
    else:
        raise ValueError(f"unknown initializer type {kind!r}")
    return values.astype(dtype.np)
