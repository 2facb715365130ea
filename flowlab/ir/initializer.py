"""What an initializer conf (OneFlow's ``InitializerConf``, a variable op's ``initializer`` attr) means for a weight's
shape: its data format and fans. Shared by the conf builders (ops/initializers.py: ``kaiming_initializer`` sizes its
std by a fan) and the fill kernel (kernels/initializers.py: ``variance_scaling`` reads the fan at init), which may
not import each other; OneFlow keeps the same rule twice (``_CalcFan`` in Python, ``GenInitialFan`` in C++)."""

from __future__ import annotations

import math


def normalize_data_format(data_format: str) -> str:
    """OneFlow's ``_get_data_format``: ``"NC..."`` → channels_first, ``"N...C"`` → channels_last, or ``""``."""
    if not isinstance(data_format, str):
        raise TypeError(f"data_format must be a string; got {data_format!r}")
    if data_format in ("", "channels_first", "channels_last"):
        return data_format
    if data_format.startswith("NC"):
        return "channels_first"
    if data_format.startswith("N") and data_format.endswith("C"):
        return "channels_last"
    raise ValueError(f"data_format must be 'NC...' (e.g. 'NCHW'), 'N...C' (e.g. 'NHWC') or ''; got {data_format!r}")


def fans(shape: tuple[int, ...], data_format: str = "") -> tuple[float, float]:
    """(fan_in, fan_out) as OneFlow's ``GenInitialFan``: fan_in is everything but axis 0; fan_out is axis 0 times
    the receptive field. A dense weight (units, in) has (in, units); a conv weight (out, in, kh, kw) for
    channels_first (NCHW) or (out, kh, kw, in) for channels_last. OneFlow accepts ``data_format=""`` only for
    2-D weights; flowlab reads it as channels_first for other ranks."""
    if not shape:
        return 1.0, 1.0
    fmt = normalize_data_format(data_format)
    receptive = math.prod(shape[1:-1]) if fmt == "channels_last" else math.prod(shape[2:])
    return float(math.prod(shape[1:])), float(shape[0] * receptive)


def fan(shape: tuple[int, ...], mode: str, data_format: str = "") -> float:
    """The fan ``mode`` (``fan_in``, ``fan_out``, ``fan_avg``) picks for a weight of ``shape``."""
    fan_in, fan_out = fans(shape, data_format)
    return {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
