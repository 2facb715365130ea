"""Registers: numpy views into one arena per memory block; ``register_num`` of them per register desc."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import AllocationError
from ..ir import MemBlock, Plan, RegstDesc


class Regst:
    """One register: the blobs of its desc, as arrays over the block's bytes, plus protocol state."""

    __slots__ = ("desc", "index", "blobs", "first", "ids", "reading_cnt", "act_id", "event", "header")

    def __init__(self, desc: RegstDesc, index: int, blobs: dict[str, np.ndarray],
                 header: dict[str, Any] | None = None) -> None:
        self.desc = desc
        self.index = index
        self.blobs = blobs
        # The current shape of each dynamic blob (OneFlow's blob header), by lbn: written by the producer's act,
        # read by every consumer's (runtime/dynamic.py). A blob not in it has its static shape. Registers over the
        # same bytes (an interface blob shared by a user job and its push or pull job) share one header, as the
        # header lies in the register's memory in OneFlow.
        self.header: dict[str, Any] = {} if header is None else header
        self.first: Any = next(iter(blobs.values()), None)  # the main job's registers hold one i32[1] id blob
        # The same bytes as Python ints: the main job's actors read and write a section id a few times an act, and
        # int(first[0]) costs ~400 ns against ~60 ns through a memoryview. A view, not a copy: what is written
        # into ``first`` (replay's settle, a debugger) is what ``ids`` reads.
        self.ids: Any = _int_view(self.first)
        self.reading_cnt = 0  # consumers that still read it; writable again at 0
        self.act_id = -1  # the producer's act that last wrote it
        self.event: tuple[Any, Any] | None = None  # (stream, event) of the last GPU act on it (runtime/gpu.py)

    @property
    def regst_desc_id(self) -> int:
        return self.desc.regst_desc_id

    def __repr__(self) -> str:
        return f"Regst(r{self.desc.regst_desc_id}#{self.index}, act {self.act_id}, reading {self.reading_cnt})"


def _int_view(array: Any) -> Any:
    """A memoryview of a host integer array (its items read as Python ints); the array itself otherwise (a GPU
    array, a float blob: nothing reads ids from those)."""
    if isinstance(array, np.ndarray) and array.dtype.kind in "iu" and array.flags.c_contiguous:
        return array.data  # a memoryview of the array
    return array


def allocate_arenas(blocks: tuple[MemBlock, ...], plan: Plan | None = None) -> dict[int, Any]:
    """One zeroed arena per block. A block larger than the machine's memory fails before anything is allocated
    (np.zeros would often succeed lazily and the process be killed when the pages are touched); either way the
    error names the job, the blob and the bytes (``plan`` gives the names)."""
    physical = physical_memory()
    total = sum(block.mem_size for block in blocks if not block.mem_case.startswith("device"))
    if physical is not None and blocks and total > physical:
        largest = max(blocks, key=lambda b: b.mem_size)
        raise AllocationError(block_message(largest, plan, f"the Plan's {len(blocks)} memory blocks need "
                                            f"{total:,} bytes ({_human(total)}) in all, and this machine has "
                                            f"{_human(physical)} of memory"))
    arenas = {}
    for block in blocks:
        if block.mem_case != "host":  # device memory or pinned host memory, through numba.cuda
            from .gpu import allocate_block

            try:
                arenas[block.mem_block_id] = allocate_block(block)
            except Exception as err:  # numba's CudaAPIError (out of device memory) and the like
                raise AllocationError(block_message(block, plan, f"allocating it in {block.mem_case} memory "
                                                    f"failed: {err}")) from None
            continue
        try:
            arenas[block.mem_block_id] = np.zeros(block.mem_size, dtype=np.uint8)
        except MemoryError as err:
            raise AllocationError(block_message(block, plan, f"allocating it failed: {err}")) from None
    return arenas


def physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system: rely on the allocation failing
        return None


def block_message(block: MemBlock, plan: Plan | None, why: str) -> str:
    total = f"memory block {block.mem_block_id} of {block.mem_size:,} bytes ({_human(block.mem_size)})"
    if plan is None:
        return f"{total}: {why}"
    descs = [d for d in plan.regst_descs.values() if d.mem_block_id == block.mem_block_id and not d.is_ctrl]
    blobs = [(bd.nbytes, lbn, bd) for d in descs for lbn, bd in d.lbi2blob_desc.items()]
    if not blobs:
        return f"{total}: {why}"
    nbytes, lbn, blob_desc = max(blobs, key=lambda b: b[0])
    # A block may serve a user job and its push/pull jobs (interface blobs): name the user's job.
    jobs = sorted(block.job_ids, key=lambda j: plan.job_kinds[j] != "user")
    job = plan.job_names[jobs[0]] if jobs else "?"
    return (f"job {job!r} needs {nbytes:,} bytes ({_human(nbytes)}) for blob {lbn!r} {blob_desc} ({total}); "
            f"{why}")


def _human(nbytes: int) -> str:
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.2f} {unit}" if unit != "B" else f"{nbytes} B"
        size /= 1024
    raise AssertionError("unreachable")


def blob_view(arena: Any, start: int, nbytes: int, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    """The array of one blob over bytes [start, start + nbytes) of an arena, sharing its memory: a NumPy view of
    a host or pinned arena, a DeviceNDArray of a device one. numba-cuda's DeviceNDArray slice keeps the byte
    offset in its memory pointer, and view(dtype) and reshape keep that pointer (tests/cuda/device_view_probe.py
    checks this on numba-cuda's own class, without a GPU too)."""
    return arena[start:start + nbytes].view(dtype).reshape(shape)


def make_regsts(plan: Plan, arenas: dict[int, np.ndarray]) -> dict[int, list[Regst]]:
    """All registers of the plan, by regst desc id; blob arrays are views into the arenas."""
    out: dict[int, list[Regst]] = {}
    headers: dict[tuple[int, int], dict[str, Any]] = {}  # by (block, offset): registers over the same bytes
    for desc in plan.regst_descs.values():
        regsts = []
        for k in range(desc.register_num):
            blobs = {}
            header = None
            if not desc.is_ctrl:
                arena = arenas[desc.mem_block_id]
                base = desc.mem_block_offset + k * desc.regst_size
                for lbn, blob_desc in desc.lbi2blob_desc.items():
                    blobs[lbn] = blob_view(arena, base + desc.blob_offsets[lbn], blob_desc.nbytes,
                                           blob_desc.dtype.np, blob_desc.shape)
                header = headers.setdefault((desc.mem_block_id, base), {})
            regsts.append(Regst(desc, k, blobs, header))
        out[desc.regst_desc_id] = regsts
    return out
