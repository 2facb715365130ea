"""Initializers (``flow.truncated_normal(0.1)``, ...): plain dicts on the variable op, turned into values by
the initializer kernel (kernels/initializers.py's ``initialize``) when System-ModelInit runs.

The dicts mirror OneFlow's ``InitializerConf`` (``initializer_conf.proto``): the type names its conf
(``constant``, ``constant_int``, ``random_uniform``, ``random_uniform_int``, ``random_normal``,
``truncated_normal``, ``variance_scaling``) and the other keys are that conf's fields (``std``, ``min``, ...).
``xavier_*`` / ``glorot_*`` are ``variance_scaling`` with ``fan_avg``, as in OneFlow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..ir.dtype import as_dtype
from ..ir.initializer import fan, normalize_data_format

VARIANCE_NORMS = ("fan_in", "fan_out", "fan_avg")
DISTRIBUTIONS = ("truncated_normal", "random_normal", "random_uniform")


def _is_integer(dtype: Any) -> bool:
    return dtype is not None and not as_dtype(dtype).is_floating


def constant_initializer(value: float = 0, dtype: Any = None) -> dict[str, Any]:
    """All elements ``value`` (an integer dtype keeps an exact int, OneFlow's ``constant_int_conf``)."""
    if _is_integer(dtype):
        return {"type": "constant_int", "value": int(value)}
    return {"type": "constant", "value": float(value)}


def zeros_initializer(dtype: Any = None) -> dict[str, Any]:
    return constant_initializer(0.0, dtype)


def ones_initializer(dtype: Any = None) -> dict[str, Any]:
    return constant_initializer(1.0, dtype)


def random_uniform_initializer(minval: float = 0, maxval: float = 1, dtype: Any = None) -> dict[str, Any]:
    """Uniform in ``[minval, maxval)``; integers in ``[minval, maxval)`` for an integer ``dtype``."""
    if maxval < minval:
        raise ValueError(f"random_uniform_initializer needs minval <= maxval; got {minval} > {maxval}")
    if _is_integer(dtype):
        return {"type": "random_uniform_int", "min": int(minval), "max": int(maxval)}
    return {"type": "random_uniform", "min": float(minval), "max": float(maxval)}


def _check_std(stddev: float, what: str) -> float:
    if stddev < 0:
        raise ValueError(f"{what} needs stddev >= 0; got {stddev}")
    return float(stddev)


def random_normal_initializer(mean: float = 0.0, stddev: float = 1.0, seed: int | None = None,
                              dtype: Any = None) -> dict[str, Any]:
    """Normal(mean, stddev). ``seed`` is accepted for OneFlow's signature; the variable's seed decides."""
    return {"type": "random_normal", "mean": float(mean), "std": _check_std(stddev, "random_normal_initializer")}


def truncated_normal_initializer(mean: float = 0.0, stddev: float = 1.0) -> dict[str, Any]:
    """Normal(mean, stddev), redrawing values 2 stddev or more from the mean (as TF and OneFlow do)."""
    return {"type": "truncated_normal", "mean": float(mean),
            "std": _check_std(stddev, "truncated_normal_initializer")}


def truncated_normal(stddev: float = 1.0) -> dict[str, Any]:
    return truncated_normal_initializer(0.0, stddev)


def variance_scaling_initializer(scale: float = 1.0, mode: str = "fan_in", distribution: str = "truncated_normal",
                                 data_format: str = "") -> dict[str, Any]:
    """Values with variance ``scale / n``, ``n`` the fan picked by ``mode`` (see ir/initializer.py's ``fans``)."""
    if scale <= 0:
        raise ValueError(f"variance_scaling_initializer needs scale > 0; got {scale}")
    if mode.lower() not in VARIANCE_NORMS:
        raise ValueError(f"mode must be one of {VARIANCE_NORMS}; got {mode!r}")
    if distribution.lower() not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {DISTRIBUTIONS}; got {distribution!r}")
    return {"type": "variance_scaling", "scale": float(scale), "variance_norm": mode.lower(),
            "distribution": distribution.lower(), "data_format": normalize_data_format(data_format)}


def xavier_uniform_initializer(data_format: str = "") -> dict[str, Any]:
    """Uniform in ±sqrt(6 / (fan_in + fan_out))."""
    return variance_scaling_initializer(1.0, "fan_avg", "random_uniform", data_format)


def xavier_normal_initializer(data_format: str = "") -> dict[str, Any]:
    """Normal(0, sqrt(2 / (fan_in + fan_out)))."""
    return variance_scaling_initializer(1.0, "fan_avg", "random_normal", data_format)


glorot_uniform_initializer = xavier_uniform_initializer
glorot_normal_initializer = xavier_normal_initializer


def calc_gain(nonlinearity: str | None, negative_slope: float | None = None) -> float:
    """The gain OneFlow's ``CalcGain`` (and PyTorch's ``calculate_gain``) give a nonlinearity."""
    if nonlinearity in (None, "linear", "conv1d", "conv2d", "conv3d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if negative_slope is None else float(negative_slope)
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(f"unsupported nonlinearity {nonlinearity!r}; expected None, 'linear', 'sigmoid', 'tanh', "
                     "'relu' or 'leaky_relu'")


def kaiming_initializer(shape: Sequence[int], distribution: str = "random_normal", mode: str = "fan_in",
                        nonlinearity: str | None = "leaky_relu", negative_slope: float = 0.0,
                        data_format: str = "NCHW") -> dict[str, Any]:
    """He et al. (2015): std = gain / sqrt(fan) for the weight ``shape``; a random_normal or random_uniform
    initializer, as OneFlow's ``kaiming_initializer`` returns."""
    shape = tuple(int(d) for d in shape)
    if len(shape) < 2 or math.prod(shape) <= 0:
        raise ValueError(f"kaiming_initializer needs the shape of a dense or conv weight (rank >= 2); got {shape}")
    if distribution not in ("random_normal", "random_uniform"):
        raise ValueError(f"distribution must be 'random_normal' or 'random_uniform'; got {distribution!r}")
    if mode not in VARIANCE_NORMS:
        raise ValueError(f"mode must be one of {VARIANCE_NORMS}; got {mode!r}")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"data_format must be 'NCHW' or 'NHWC'; got {data_format!r}")
    std = calc_gain(nonlinearity, negative_slope) / math.sqrt(fan(shape, mode, normalize_data_format(data_format)))
    if distribution == "random_normal":
        return random_normal_initializer(0.0, std)
    bound = math.sqrt(3.0) * std
    return random_uniform_initializer(-bound, bound)
