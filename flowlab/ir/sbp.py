"""SBP: how one logical blob lies on the devices of its placement (OneFlow's ``SbpParallel``, ``SbpSignature``).

- ``S(axis)`` split: each device holds a slice along ``axis`` (OneFlow's balanced splitter decides the sizes);
- ``B`` broadcast: each device holds the whole blob;
- ``P`` partial sum: each device holds a whole-shaped addend; the logical blob is their sum.

A job records the signature chosen for each op in ``Job.sbp_signatures`` (OneFlow's
``job_parallel_view_conf.op_name2sbp_signature_conf``): op name -> ``SbpSignature``, whose keys are the op's
blob names in OneFlow's ``bn_in_op`` form (``"<arg>_<index>"``, e.g. ``"x_0"``, ``"out_0"``; system ops with a
single output use ``"out"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .frozen import FrozenDict

SBP_KINDS = ("split", "broadcast", "partial_sum")


@dataclass(frozen=True)
class SbpParallel:
    kind: str  # one of SBP_KINDS
    axis: int = -1  # the split axis; -1 for broadcast and partial_sum

    def __post_init__(self) -> None:
        if self.kind not in SBP_KINDS:
            raise ValueError(f"SBP kind must be one of {SBP_KINDS}; got {self.kind!r}")
        if (self.kind == "split") != (self.axis >= 0):
            raise ValueError(f"SBP {self.kind!r} with axis {self.axis}: only split takes an axis, and it must be >= 0")

    @property
    def is_split(self) -> bool:
        return self.kind == "split"

    @property
    def is_broadcast(self) -> bool:
        return self.kind == "broadcast"

    @property
    def is_partial_sum(self) -> bool:
        return self.kind == "partial_sum"

    def __str__(self) -> str:
        return f"S({self.axis})" if self.is_split else ("B" if self.is_broadcast else "P")


def split(axis: int) -> SbpParallel:
    return SbpParallel("split", axis)


BROADCAST = SbpParallel("broadcast")
PARTIAL_SUM = SbpParallel("partial_sum")


def parse_sbp(text: str) -> SbpParallel:
    """Inverse of ``str``: ``"S(0)"``, ``"B"``, ``"P"``."""
    if text == "B":
        return BROADCAST
    if text == "P":
        return PARTIAL_SUM
    if text.startswith("S(") and text.endswith(")") and text[2:-1].isdigit():
        return split(int(text[2:-1]))
    raise ValueError(f"not an SBP: {text!r}; expected 'S(<axis>)', 'B' or 'P'")


@dataclass(frozen=True)
class SbpSignature:
    """One op's SBP for each of its blobs: ``bn_in_op -> SbpParallel``."""

    bn_in_op2sbp_parallel: Mapping[str, SbpParallel] = field(default_factory=FrozenDict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bn_in_op2sbp_parallel", FrozenDict(self.bn_in_op2sbp_parallel))

    def __getitem__(self, bn_in_op: str) -> SbpParallel:
        return self.bn_in_op2sbp_parallel[bn_in_op]

    def __str__(self) -> str:
        return "{" + ", ".join(f"{bn}: {sbp}" for bn, sbp in self.bn_in_op2sbp_parallel.items()) + "}"


def input_bns(inputs: Mapping[str, tuple[str, ...]], system: bool) -> list[tuple[str, str]]:
    """``(bn_in_op, lbn)`` for each input of an op: ``"<arg>_<i>"``; a system op's single blob of an arg is
    ``"<arg>"`` (as its single output is ``"out"``)."""
    return [(arg if system and len(lbns) == 1 else f"{arg}_{i}", lbn)
            for arg, lbns in inputs.items() for i, lbn in enumerate(lbns)]


def output_bns(outputs: Mapping[str, tuple[str, ...]]) -> list[tuple[str, str]]:
    """``(bn_in_op, lbn)`` for each output: the bn is the lbn's blob part (``"out_0"``, or ``"out"``)."""
    return [(lbn.rpartition("/")[2], lbn) for lbns in outputs.values() for lbn in lbns]


def balanced_split(total: int, parts: int) -> tuple[int, ...]:
    """OneFlow's BalancedSplitter: ``total`` items over ``parts``; the first ``total % parts`` get one more."""
    if parts <= 0:
        raise ValueError(f"cannot split over {parts} parts")
    if total < parts:
        raise ValueError(f"cannot split {total} items over {parts} parts: every part needs at least one")
    base, extra = divmod(total, parts)
    return tuple(base + (1 if i < extra else 0) for i in range(parts))
