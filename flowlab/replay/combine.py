"""Which calls a fused segment makes for its run of acts (replay/fused.py ``_segment``): kernel chains
(kernels/registry.py) and pairs (kernels/numba_cpu/pairs.py) stand for several consecutive acts each, computing the
same bytes as the acts one by one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..kernels.registry import FusedCall, chain_at

if TYPE_CHECKING:
    from ..runtime.actor import Actor


def segment_calls(run: list[tuple[Callable[[], None], Actor, FusedCall]]) -> list[tuple[int, FusedCall]]:
    """The calls a segment makes for its run, left to right: a chain (kernels/registry.py ``chain_at``: a conv with
    its bias_add, relu and pool, sample by sample) where one starts, else two consecutive acts that
    kernels/numba_cpu/pairs.py does in one pass, else the act's own call. A chain or a pair never fails (neither
    is a checked call), so it is indexed by one of its acts: a chain by its first, a pair by its second."""
    from ..kernels.numba_cpu.pairs import pair_call, pairs_enabled

    calls = [call for _, _, call in run]
    made, index = [], 0
    while index < len(calls):
        chained, count = chain_at(calls, index)
        if count > 1:
            made.append((index, chained))
            index += count
            continue
        paired = pair_call(calls[index], calls[index + 1]) if index + 1 < len(calls) and pairs_enabled() else None
        made.append((index + 1, paired) if paired is not None else (index, calls[index]))
        index += 2 if paired is not None else 1
    return made
