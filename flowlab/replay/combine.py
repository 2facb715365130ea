"""Which calls a fused segment makes for its run of acts (replay/fused.py ``_segment``): kernel chains
(kernels/registry.py) and pairs (kernels/numba_cpu/pairs.py) stand for several consecutive acts each, computing the
same bytes as the acts one by one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..kernels.registry import External, FusedCall, Owned, chain_at

if TYPE_CHECKING:
    from ..runtime.actor import Actor


def segment_calls(run: list[tuple[Callable[[], None], Actor, FusedCall]]) -> list[tuple[int, FusedCall]]:
    """The calls a segment makes for its run, left to right: a chain (kernels/registry.py ``chain_at``: a conv with
    its bias_add, relu and pool, sample by sample) where one starts, else two consecutive acts that
    kernels/numba_cpu/pairs.py does in one pass, else the act's own call. A chain or a pair never fails (neither
    is a checked call), so it is indexed by one of its acts: a chain by its first, a pair by its second.

    A pair may also skip one act between its two (``_around``): an unchecked act sharing no byte with the pair's
    first, which then runs before that first instead of after it (a lane's learning-rate copy between a gradient's
    add and its update); the two orders write the same bytes."""
    return [entry for _, made in _units([call for _, _, call in run]) for entry in made]


def split_run(run: list[Any], limit: int) -> list[tuple[list[Any], list[tuple[int, FusedCall]]]]:
    """``run`` cut into consecutive pieces of at most ``limit`` segment calls each, with each piece's calls (those
    ``segment_calls`` makes for the whole run, indexed from the piece's first act): as even as the units allow,
    never inside a chain or a pair. One piece when the run makes at most ``limit`` calls."""
    units = _units([call for _, _, call in run])
    total = sum(len(made) for _, made in units)
    target = -(-total // -(-total // limit)) if total > limit else total  # ceil(total / limit) pieces share them
    pieces: list[tuple[list[Any], list[tuple[int, FusedCall]]]] = []
    start = acts = 0
    made_here: list[tuple[int, FusedCall]] = []
    for count, made in units:
        if made_here and len(made_here) + len(made) > target:
            pieces.append((run[start:acts], made_here))
            start, made_here = acts, []
        made_here += [(index - start, call) for index, call in made]
        acts += count
    pieces.append((run[start:], made_here))
    return pieces


def _units(calls: list[FusedCall]) -> list[tuple[int, list[tuple[int, FusedCall]]]]:
    """``segment_calls``'s choices, left to right: per unit, the acts it stands for and the calls it makes."""
    from ..kernels.numba_cpu.pairs import pair_call

    units: list[tuple[int, list[tuple[int, FusedCall]]]] = []
    index = 0
    while index < len(calls):
        chained, count = chain_at(calls, index)
        if count > 1:
            units.append((count, [(index, chained)]))
            index += count
            continue
        paired = pair_call(calls[index], calls[index + 1]) if index + 1 < len(calls) else None
        if paired is None and index + 2 < len(calls) and _around(calls[index], calls[index + 1]):
            paired = pair_call(calls[index], calls[index + 2])
            if paired is not None:
                units.append((3, [(index + 1, calls[index + 1]), (index + 2, paired)]))
                index += 3
                continue
        units.append((2, [(index + 1, paired)]) if paired is not None else (1, [(index, calls[index])]))
        index += 2 if paired is not None else 1
    return units


def _around(first: FusedCall, between: FusedCall) -> bool:
    """Whether ``between`` may run before ``first``: it cannot fail, and no array of one shares a byte with an
    array of the other (so neither reads what the other writes); a constant is no array, an external is not
    allowed."""
    if between.checked or any(isinstance(a, External) for a in (*first.args, *between.args)):
        return False
    arrays = [[a.array if isinstance(a, Owned) else a for a in call.args] for call in (first, between)]
    spans = [[(a.ctypes.data, a.ctypes.data + a.nbytes) for a in args if isinstance(a, np.ndarray)] for args in arrays]
    return not any(lo < hi2 and lo2 < hi for lo, hi in spans[0] for lo2, hi2 in spans[1])
