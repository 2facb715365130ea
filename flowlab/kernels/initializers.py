"""The initializer kernel: the values an initializer conf (ops/initializers.py builds it, a variable op carries it)
gives a variable, as System-ModelInit and ModelLoad (runtime/system_kernels.py) fill it. Deterministic for a seed:
every draw comes from PCG64(seed)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ir import DType
from ..ir.initializer import fan

TRUNCATED_STD = 0.87962566103423978  # std of a standard normal truncated to [-2, 2]


def truncated(rng: np.random.Generator, mean: float, std: float, shape: tuple[int, ...]) -> np.ndarray:
    """Normal(mean, std) redrawn until every value lies strictly within 2 std of the mean."""
    values = rng.normal(0.0, 1.0, shape)
    outside = np.abs(values) >= 2.0
    while outside.any():
        values[outside] = rng.normal(0.0, 1.0, int(outside.sum()))
        outside = np.abs(values) >= 2.0
    return mean + std * values


def initialize(conf: dict[str, Any], shape: tuple[int, ...], dtype: DType, seed: int) -> np.ndarray:
    """The values ``conf`` gives a variable of ``shape`` and ``dtype``, drawn from PCG64(``seed``)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    shape = tuple(shape)
    kind = conf["type"]
    if kind in ("constant", "constant_int"):
        values = np.full(shape, conf["value"])
    elif kind == "random_uniform":
        values = rng.uniform(conf["min"], conf["max"], shape)
    elif kind == "random_uniform_int":
        values = rng.integers(conf["min"], max(conf["max"], conf["min"] + 1), shape)
    elif kind == "random_normal":
        values = rng.normal(conf["mean"], conf["std"], shape)
    elif kind == "truncated_normal":
        values = truncated(rng, conf["mean"], conf["std"], shape)
    elif kind in ("variance_scaling", "xavier_uniform"):  # "xavier_uniform": the dict of older flowlab versions
        if kind == "xavier_uniform":  # what xavier_uniform_initializer builds now
            conf = {"scale": 1.0, "variance_norm": "fan_avg", "distribution": "random_uniform",
                    "data_format": conf.get("data_format", "")}
        scale = conf["scale"] / fan(shape, conf["variance_norm"], conf.get("data_format", ""))
        if conf["distribution"] == "truncated_normal":
            values = truncated(rng, 0.0, math.sqrt(scale) / TRUNCATED_STD, shape)
        elif conf["distribution"] == "random_normal":
            values = rng.normal(0.0, math.sqrt(scale), shape)
        else:
            limit = math.sqrt(3.0 * scale)
            values = rng.uniform(-limit, limit, shape)
    else:
        raise ValueError(f"unknown initializer type {kind!r}")
    return values.astype(dtype.np)
