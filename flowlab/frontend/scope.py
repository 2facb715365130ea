"""Placement and name scopes (``flow.scope.placement``, ``flow.scope.namespace``) as explicit stacks."""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..errors import OpInferError, PlacementError
from ..ir import ParallelConf
from .location import user_location

DEVICE_TAGS = ("cpu", "gpu")
_DEVICE_NAME = re.compile(r"^(\d+):(\d+)(?:-(\d+))?$")


@dataclass
class EnvConfig:
    """``flow.config``: process-wide resource settings, read when a session starts."""

    cpu_device_num: int = 1
    gpu_device_num: int = 0
    debug_mode: bool = False


ENV = EnvConfig()
_placements: list[ParallelConf] = []
_name_scopes: list[str] = []
_gpu_warned = False


def parse_parallel_conf(device_tag: str, machine_device_ids: str | Sequence[str]) -> ParallelConf:
    """Check ``("cpu", "0:0-1")``-style placements and return the ParallelConf they name."""
    if device_tag not in DEVICE_TAGS:
        raise PlacementError(f"device_tag must be one of {DEVICE_TAGS}; got {device_tag!r}")
    names = [machine_device_ids] if isinstance(machine_device_ids, str) else list(machine_device_ids)
    if not names:
        raise PlacementError("machine_device_ids is empty; expected e.g. '0:0' or ['0:0-1']")
    for name in names:
        match = _DEVICE_NAME.match(name) if isinstance(name, str) else None
        if match is None:
            raise PlacementError(
                f"malformed machine_device_ids entry {name!r}; expected '<machine>:<device>' or "
                "'<machine>:<first>-<last>', e.g. '0:0' or '0:0-3'"
            )
        lo, hi = int(match[2]), int(match[3] if match[3] is not None else match[2])
        if hi < lo:
            raise PlacementError(f"device range {name!r} ends before it starts")
    conf = ParallelConf(device_tag, tuple(names))
    if conf.parallel_num > 1 or any(machine != 0 for machine, _ in conf.devices):
        raise PlacementError(
            f"placement {conf} spans {conf.parallel_num} devices; flowlab runs on one device (machine 0) for now"
        )
    return conf


def _effective(conf: ParallelConf) -> ParallelConf:
    """A 'gpu' placement runs on the CPU until flowlab has CUDA kernels, as on a CPU-only OneFlow build."""
    global _gpu_warned
    if conf.device_tag != "gpu":
        return conf
    if not _gpu_warned:
        warnings.warn(
            "flowlab has no CUDA device here: 'gpu' placements run on the CPU (like a CPU-only OneFlow build)",
            stacklevel=4,
        )
        _gpu_warned = True
    return ParallelConf("cpu", conf.device_names)


class PlacementScope:
    """``with flow.scope.placement("cpu", "0:0"):`` — also a value for ``default_placement_scope``."""

    def __init__(self, device_tag: str, machine_device_ids: str | Sequence[str] = "0:0") -> None:
        conf = _effective(parse_parallel_conf(device_tag, machine_device_ids))
        device_id = conf.devices[0][1]
        if device_id >= ENV.cpu_device_num:
            raise PlacementError(
                f"placement {conf} names cpu device {device_id}, but flow.config.cpu_device_num is "
                f"{ENV.cpu_device_num}"
            )
        self.parallel_conf = conf

    def __enter__(self) -> ParallelConf:
        _placements.append(self.parallel_conf)
        return self.parallel_conf

    def __exit__(self, *exc: object) -> None:
        _placements.pop()

    def __repr__(self) -> str:
        return f"flow.scope.placement({self.parallel_conf})"


placement = PlacementScope


def current_placement(default: ParallelConf | None = None) -> ParallelConf:
    if _placements:
        return _placements[-1]
    return default or ParallelConf()


@contextlib.contextmanager
def namespace(name: str) -> Iterator[str]:
    if not isinstance(name, str) or not name:
        raise ValueError(f"a name scope needs a non-empty string; got {name!r}")
    _name_scopes.append(name)
    try:
        yield name
    finally:
        _name_scopes.pop()


def scoped_name(name: str) -> str:
    """OneFlow joins name scopes with '-': ``hidden-weight``. An empty name would silently become the scope's
    prefix (``block-``), so every named op and variable is refused here."""
    if not name:
        where = user_location()
        raise OpInferError(f"{where + ': ' if where else ''}op name is empty (got {name!r}); give a non-empty name, "
                           "or name=None where the op generates one")
    return "-".join([*_name_scopes, name])


def reset_scopes() -> None:
    """Drop scopes left open by an exception while tracing."""
    _placements.clear()
    _name_scopes.clear()
