"""Which calls a fused segment makes for its run of acts (replay/fused.py ``_segment``): kernel chains
(kernels/registry.py) and pairs (kernels/numba_cpu/pairs.py) stand for several consecutive acts each, computing the
same bytes as the acts one by one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

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
    from ..kernels.numba_cpu.pairs import pair_call

    calls = [call for _, _, call in run]
    made, index = [], 0
    while index < len(calls):
        chained, count = chain_at(calls, index)
        if count > 1:
            made.append((index, chained))
            index += count
            continue
        paired = pair_call(calls[index], calls[index + 1]) if index + 1 < len(calls) else None
        if paired is None and index + 2 < len(calls) and _around(calls[index], calls[index + 1]):
            paired = pair_call(calls[index], calls[index + 2])
            if paired is not None:
                made += [(index + 1, calls[index + 1]), (index + 2, paired)]
                index += 3
                continue
        made.append((index + 1, paired) if paired is not None else (index, calls[index]))
        index += 2 if paired is not None else 1
    return made


def _around(first: FusedCall, between: FusedCall) -> bool:
    """Whether ``between`` may run before ``first``: it cannot fail, and no array of one shares a byte with an
    array of the other (so neither reads what the other writes); a constant is no array, an external is not
    allowed."""
    if between.checked or any(isinstance(a, External) for a in (*first.args, *between.args)):
        return False
    arrays = [[a.array if isinstance(a, Owned) else a for a in call.args] for call in (first, between)]
    spans = [[(a.ctypes.data, a.ctypes.data + a.nbytes) for a in args if isinstance(a, np.ndarray)] for args in arrays]
    return not any(lo < hi2 and lo2 < hi for lo, hi in spans[0] for lo2, hi2 in spans[1])
