"""A box: the slice of a blob one device holds (OneFlow's ``TensorSliceView``), one half-open range per axis.

Boxes live in a *view shape*: the logical shape, or the flattened ``(elem_cnt,)`` when P->B boxing
reduce-scatters a flattened blob. ``S(axis)`` on n devices gives device p the p-th part of
``balanced_split(dim, n)`` on that axis; ``B`` and ``P`` give every device the whole box.
"""

from __future__ import annotations

from typing import NamedTuple

from .sbp import SbpParallel, balanced_split

Range = tuple[int, int]


class Box(NamedTuple):
    """A slice of a view shape: ``ranges[axis] = (lo, hi)``. A working value of the plan builder and the boxing
    kernels (a Plan stores the ranges themselves, in the boxing ops' ``out_slice``/``in_slice`` attrs)."""

    ranges: tuple[Range, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(hi - lo for lo, hi in self.ranges)

    @property
    def elem_cnt(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def intersect(self, other: Box) -> Box | None:
        ranges = tuple((max(a[0], b[0]), min(a[1], b[1])) for a, b in zip(self.ranges, other.ranges))
        return Box(ranges) if all(lo < hi for lo, hi in ranges) else None

    def relative_to(self, outer: Box) -> tuple[slice, ...]:
        """This box as numpy slices of an array holding ``outer``."""
        return tuple(slice(lo - o, hi - o) for (lo, hi), (o, _) in zip(self.ranges, outer.ranges))

    def __str__(self) -> str:
        return "[" + ",".join(f"{lo}:{hi}" for lo, hi in self.ranges) + "]"


def full_box(shape: tuple[int, ...]) -> Box:
    return Box(tuple((0, d) for d in shape))


def box_of(shape: tuple[int, ...], sbp: SbpParallel, parallel_id: int, parallel_num: int) -> Box:
    """The part of a ``shape``-shaped view that device ``parallel_id`` of ``parallel_num`` holds under ``sbp``."""
    ranges = [(0, d) for d in shape]
    if sbp.is_split and parallel_num > 1:
        if sbp.axis >= len(shape):
            raise ValueError(f"SBP {sbp} splits axis {sbp.axis} of a blob of shape {list(shape)}")
        parts = balanced_split(shape[sbp.axis], parallel_num)
        lo = sum(parts[:parallel_id])
        ranges[sbp.axis] = (lo, lo + parts[parallel_id])
    return Box(tuple(ranges))
