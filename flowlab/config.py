"""``flow.config``: process-wide settings (device counts, debug mode), read when a session starts."""

from __future__ import annotations

import warnings

from .frontend.scope import ENV, gpu_available

_warned: set[str] = set()


def cpu_device_num(n: int) -> None:
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"cpu_device_num takes a positive int; got {n!r}")
    ENV.cpu_device_num = n


def gpu_device_num(n: int) -> None:
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"gpu_device_num takes a non-negative int; got {n!r}")
    ENV.gpu_device_num = n
    if "gpu_device_num" not in _warned and not gpu_available():  # 'gpu' placements run on the CPU here
        _warned.add("gpu_device_num")
        warnings.warn("flowlab accepts flow.config.gpu_device_num but does not act on it: there is no CUDA device "
                      "(nor the simulator) here, so 'gpu' placements run on the CPU", stacklevel=2)


def enable_debug_mode(flag: bool = True) -> None:
    """Write the job set, each optimized job, the merged plan and its DOT under ./log/<hostname>/ at start."""
    ENV.debug_mode = bool(flag)
