"""A variable's memory on every device of its placement: the runtime's registers, seen as one logical value.

On one device a variable is one array. On n devices each device's variable task has its own register: the
whole value on each (B), or a slice of it (S(axis), OneFlow's balanced splitter). Reading gathers the logical
value; writing puts every device's piece in place; ``keys`` names each device's array for the call guard's
snapshots (``name`` for the first device, ``name@<parallel_id>`` for the others).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir import SbpParallel

if TYPE_CHECKING:
    from .runtime import Runtime


@dataclass(frozen=True)
class VariablePieces:
    name: str
    sbp: SbpParallel | None  # None on one device
    arrays: tuple[np.ndarray, ...]  # by parallel_id: live views into the memory blocks

    @property
    def split_axis(self) -> int | None:
        return self.sbp.axis if self.sbp is not None and self.sbp.is_split and len(self.arrays) > 1 else None

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical shape."""
        axis = self.split_axis
        first = self.arrays[0].shape
        if axis is None:
            return first
        return (*first[:axis], sum(a.shape[axis] for a in self.arrays), *first[axis + 1:])

    @property
    def dtype(self) -> np.dtype:
        return self.arrays[0].dtype

    def logical(self) -> np.ndarray:
        """A copy of the logical value (a GPU's piece copied to the host)."""
        axis = self.split_axis
        arrays = [on_host(a) for a in self.arrays]
        return arrays[0].copy() if axis is None else np.concatenate(arrays, axis=axis)

    def write(self, value: np.ndarray) -> None:
        """Put a logical value in place on every device."""
        axis = self.split_axis
        if axis is None:
            for array in self.arrays:
                put(array, value)
            return
        lo = 0
        for array in self.arrays:
            hi = lo + array.shape[axis]
            put(array, value[(slice(None),) * axis + (slice(lo, hi),)])
            lo = hi

    def __repr__(self) -> str:
        pieces = ", ".join(str(list(a.shape)) for a in self.arrays)
        return f"<variable {self.name!r} {list(self.shape)} {self.sbp or 'one device'}: pieces {pieces}>"

    def keys(self) -> dict[str, np.ndarray]:
        return {self.name if p == 0 else f"{self.name}@{p}": a for p, a in enumerate(self.arrays)}


def on_host(array: Any) -> np.ndarray:
    """The array itself, or a host copy of a device array (a GPU variable's register)."""
    return array.copy_to_host() if hasattr(array, "copy_to_host") else array


def put(array: Any, value: Any) -> None:
    """``array[...] = value`` (numpy's broadcasting and casting), into device memory too."""
    if hasattr(array, "copy_to_device"):
        # a fresh C array: np.broadcast_to gives a length-1 axis stride 0, which ascontiguousarray keeps and Numba's
        # copy (array_core) then drops, so a (2, 1) value arrived as (2,)
        host = np.empty(array.shape, array.dtype)
        host[...] = value
        array.copy_to_device(host)
    else:
        array[...] = value


def variable_pieces(rt: Runtime) -> dict[str, VariablePieces]:
    """Every variable of the runtime's Plan, its pieces in parallel_id order."""
    found: dict[str, dict[int, np.ndarray]] = {}
    sbps: dict[str, SbpParallel | None] = {}
    for task in rt.plan.tasks:
        op = task.exec_sequence[0] if task.exec_sequence else None
        if op is None or op.op_type != "variable" or task.is_boxing:
            continue
        pieces = found.setdefault(op.name, {})
        if task.parallel_id in pieces:
            continue  # the same variable in another job shares this memory
        regst_id = task.produced_regst_desc["out"].regst_desc_id
        pieces[task.parallel_id] = rt.regsts[regst_id][0].blobs[op.output_lbns[0]]
        sig = task.sbp_signature
        sbps[op.name] = sig["out"] if sig is not None and "out" in sig.bn_in_op2sbp_parallel else None
    return {name: VariablePieces(name, sbps[name], tuple(p[i] for i in sorted(p))) for name, p in found.items()}
