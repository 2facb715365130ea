"""Kernels of the tasks the plan builder inserts between devices and machines (``TaskProto.is_boxing``).

A slice-boxing node works in its *view shape* (the logical shape, or the flattened blob for P->B): every input
array holds the box ``in_slice[i]`` of that view, the output holds ``out_slice``. A copy node writes each
input's overlap with the output box; an add node sums the output box's part of every input, in input order
(parallel_id order, so every run adds in the same order); a zeros node writes a zero addend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..ir import TaskProto
from ..ir.slice_box import Box
from ..kernels.registry import FusedCall, Kernel, fusable

if TYPE_CHECKING:
    from .runtime import Runtime



def _flat(part: np.ndarray) -> np.ndarray | None:
    """A part of a register as one contiguous run (a 1-D view of the same bytes), or None when it is strided:
    a fused boxing act takes only such parts (kernels/numba_cpu/boxing.py)."""
    return part.reshape(-1) if part.flags.c_contiguous else None


def boxing_kernel(rt: Runtime, task: TaskProto) -> Kernel:
    op = task.exec_sequence[0]
    if op.op_type == "copy_comm_net":
        transport, src, dst = rt.transport, int(op.attrs["src_machine_id"]), task.machine_id

        def copy_comm_net(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            transport.send(ins, src, dst, outs)

        return Kernel(copy_comm_net, op.op_type, "system")
    out_box = Box(tuple(map(tuple, op.attrs["out_slice"])))
    in_boxes = [Box(tuple(map(tuple, b))) for b in op.attrs["in_slice"]]
    if op.op_type == "boxing_zeros":

        def boxing_zeros(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            outs[0].fill(0)

        return Kernel(boxing_zeros, op.op_type, "system")
    if op.op_type == "slice_boxing_add":
        parts = [out_box.relative_to(box) for box in in_boxes]

        def slice_boxing_add(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            out = outs[0].reshape(out_box.shape)
            first = ins[0].reshape(in_boxes[0].shape)[parts[0]]
            if len(ins) == 1:
                np.copyto(out, first)
                return
            # the first two addends in one pass (no copy of the first into ``out`` then a re-read to add): the
            # P->B reduce-scatter of a weight gradient is one add per device; later addends add in place, in order
            np.add(first, ins[1].reshape(in_boxes[1].shape)[parts[1]], out=out)
            for x, box, part in zip(ins[2:], in_boxes[2:], parts[2:]):
                out += x.reshape(box.shape)[part]

        def fused_add(ins: list[np.ndarray], outs: list[np.ndarray]) -> FusedCall | None:
            from ..kernels.numba_cpu.boxing import ADDS  # Numba only once a schedule is fused

            addends = [_flat(x.reshape(box.shape)[part]) for x, box, part in zip(ins, in_boxes, parts)]
            out = _flat(outs[0])
            if out is None or len(addends) not in ADDS or any(a is None for a in addends):
                return None
            return FusedCall(ADDS[len(addends)], (*addends, out))

        return fusable(slice_boxing_add, fused_add).wrap(slice_boxing_add, op=op.op_type, tier="system")
    if op.op_type == "slice_boxing_copy":
        moves = []  # (input index, its part, the output's part) for every overlapping input
        # an input the Plan laid inside the output (a device's own rows of a gathered variable: compiler/
        # gather_inplace.py) is already there, the same bytes: nothing to move
        piece = task.produced_regst_desc["out"].piece_inplace_consumed_regst_desc_id
        for i, box in enumerate(in_boxes):
            common = box.intersect(out_box)
            if common is not None and (piece < 0 or task.consumed_regst_desc_id.get(f"in_{i}") != (piece,)):
                moves.append((i, box.shape, common.relative_to(box), common.relative_to(out_box)))

        def slice_boxing_copy(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
            out = outs[0].reshape(out_box.shape)
            for i, shape, src, dst in moves:
                out[dst] = ins[i].reshape(shape)[src]

        def fused_copy(ins: list[np.ndarray], outs: list[np.ndarray]) -> FusedCall | None:
            from ..kernels.numba_cpu.boxing import COPIES

            out = outs[0].reshape(out_box.shape)
            args = []
            for i, shape, src, dst in moves:
                args += [_flat(ins[i].reshape(shape)[src]), _flat(out[dst])]
            if not moves or len(moves) not in COPIES or any(a is None for a in args):
                return None
            return FusedCall(COPIES[len(moves)], tuple(args))

        return fusable(slice_boxing_copy, fused_copy).wrap(slice_boxing_copy, op=op.op_type, tier="system")
    raise KeyError(f"task {task.name} ({task.task_type}) has op type {op.op_type!r}, which no boxing kernel runs")
