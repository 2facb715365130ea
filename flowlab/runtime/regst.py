"""Registers: numpy views into one arena per memory block; ``register_num`` of them per register desc."""

from __future__ import annotations

import numpy as np

from ..ir import MemBlock, Plan, RegstDesc


class Regst:
    """One register: the blobs of its desc, as arrays over the block's bytes, plus protocol state."""

    __slots__ = ("desc", "index", "blobs", "first", "reading_cnt", "act_id")

    def __init__(self, desc: RegstDesc, index: int, blobs: dict[str, np.ndarray]) -> None:
        self.desc = desc
        self.index = index
        self.blobs = blobs
        self.first = next(iter(blobs.values()), None)  # the main job's registers hold one i32[1] id blob
        self.reading_cnt = 0  # consumers that still read it; writable again at 0
        self.act_id = -1  # the producer's act that last wrote it

    @property
    def regst_desc_id(self) -> int:
        return self.desc.regst_desc_id

    def __repr__(self) -> str:
        return f"Regst(r{self.desc.regst_desc_id}#{self.index}, act {self.act_id}, reading {self.reading_cnt})"


def allocate_arenas(blocks: tuple[MemBlock, ...]) -> dict[int, np.ndarray]:
    return {b.mem_block_id: np.zeros(b.mem_size, dtype=np.uint8) for b in blocks}


def make_regsts(plan: Plan, arenas: dict[int, np.ndarray]) -> dict[int, list[Regst]]:
    """All registers of the plan, by regst desc id; blob arrays are views into the arenas."""
    out: dict[int, list[Regst]] = {}
    for desc in plan.regst_descs.values():
        regsts = []
        for k in range(desc.register_num):
            blobs = {}
            if not desc.is_ctrl:
                arena = arenas[desc.mem_block_id]
                base = desc.mem_block_offset + k * desc.regst_size
                for lbn, blob_desc in desc.lbi2blob_desc.items():
                    start = base + desc.blob_offsets[lbn]
                    raw = arena[start:start + blob_desc.nbytes]
                    blobs[lbn] = raw.view(blob_desc.dtype.np).reshape(blob_desc.shape)
            regsts.append(Regst(desc, k, blobs))
        out[desc.regst_desc_id] = regsts
    return out
