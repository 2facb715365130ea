"""OpConf: one op in a job (OneFlow's OperatorConf, flattened), and its placement (ParallelConf)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from .dtype import DType
from .frozen import FrozenDict, derived


@dataclass(frozen=True)
class ParallelConf:
    """Where an op runs: ``device_tag`` plus device names ``"<machine>:<device range>"`` as in OneFlow."""

    device_tag: str = "cpu"
    device_names: tuple[str, ...] = ("0:0",)

    @derived  # asked for per op and task by the SBP inference, the plan builder and the verifier
    def devices(self) -> tuple[tuple[int, int], ...]:
        """Expanded (machine_id, device_id) pairs."""
        out: list[tuple[int, int]] = []
        for name in self.device_names:
            machine, _, dev = name.partition(":")
            lo, _, hi = dev.partition("-")
            out.extend((int(machine), d) for d in range(int(lo), int(hi or lo) + 1))
        return tuple(out)

    @derived
    def parallel_num(self) -> int:
        return len(self.devices)

    def __post_init__(self) -> None:
        object.__setattr__(self, "device_names", tuple(self.device_names))

    def __str__(self) -> str:
        return f"{self.device_tag}:{','.join(self.device_names)}"


_PLAIN = frozenset({int, float, str, bool, type(None)})


def freeze_attr(value: Any) -> Any:
    """Attrs are compared, hashed and serialized, and no stage may change them: lists become tuples, dicts
    FrozenDicts, numpy scalars plain Python."""
    if type(value) in _PLAIN:  # most attrs: nothing to freeze (and Mapping's isinstance is slow)
        return value
    if isinstance(value, (list, tuple)):
        return tuple(freeze_attr(v) for v in value)
    if isinstance(value, Mapping):
        return FrozenDict({str(k): freeze_attr(v) for k, v in value.items()})
    if hasattr(value, "item") and not isinstance(value, (DType, str)):
        return value.item()
    return value


def format_attr(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ",".join(format_attr(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, DType):
        return value.name
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {format_attr(v)}" for k, v in value.items()) + "}"
    return str(value)


@dataclass(frozen=True)
class OpConf:
    name: str
    op_type: str
    inputs: Mapping[str, tuple[str, ...]] = field(default_factory=FrozenDict)  # arg -> lbns
    outputs: Mapping[str, tuple[str, ...]] = field(default_factory=FrozenDict)  # arg -> lbns
    attrs: Mapping[str, Any] = field(default_factory=FrozenDict)
    parallel_conf: ParallelConf = ParallelConf()
    ctrl_in_op_names: tuple[str, ...] = ()
    loc: str | None = None  # the user's source line that created the op, "pad.py:9"
    created_by: str = "user"  # user | autograd | optimizer | system | <pass name>

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", FrozenDict({k: tuple(v) for k, v in self.inputs.items()}))
        object.__setattr__(self, "outputs", FrozenDict({k: tuple(v) for k, v in self.outputs.items()}))
        object.__setattr__(self, "attrs", FrozenDict({k: freeze_attr(v) for k, v in self.attrs.items()}))
        object.__setattr__(self, "ctrl_in_op_names", tuple(self.ctrl_in_op_names))

    @property
    def device_tag(self) -> str:
        return self.parallel_conf.device_tag

    # cached: an OpConf never changes, and passes, verifier and plan builder ask for these again and again
    @cached_property
    def input_lbns(self) -> tuple[str, ...]:
        return tuple(lbn for lbns in self.inputs.values() for lbn in lbns)

    @cached_property
    def output_lbns(self) -> tuple[str, ...]:
        return tuple(lbn for lbns in self.outputs.values() for lbn in lbns)

    def replace(self, **changes: Any) -> OpConf:
        return replace(self, **changes)
