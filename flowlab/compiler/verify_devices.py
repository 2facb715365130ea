"""The Plan verifier's multi-device rules: registers between devices and machines.

- A register produced on one machine (data or control) is read on another only by a CopyCommNet task (on the
  reader's machine).
- A job's task reads another job task's register directly only when the blob lies the same way on both sides:
  the same SBP on the same number of devices and the same parallel_id, or the whole blob on both sides (one
  device, or B). Anything else must go through boxing.
- Boxing nodes read and write blobs as big as their slices say.
- With the jobs at hand, every task's blobs have the physical shape its SBP and OneFlow's balanced splitter give.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import CompileError
from ..ir import JobSet, Plan, RegstDesc, SbpParallel, TaskProto
from ..ir.sbp import input_bns
from ..ir.slice_box import Box
from ..ops.registry import get_op_def
from .slices import logical_desc, one_device_sbp, physical_desc


def check_devices(plan: Plan, job_set: JobSet | None = None) -> None:
    if job_set is not None:  # first: against the logical shapes the message can say what is wrong
        _check_physical_shapes(plan, job_set)
    tasks = {t.task_id: t for t in plan.tasks}
    regsts = plan.regst_descs
    for t in plan.tasks:
        for rid in t.consumed_ids:
            regst = regsts[rid]
            producer = tasks[regst.producer_task_id]
            if producer.machine_id != t.machine_id and t.task_type != "CopyCommNet":
                raise CompileError(
                    f"task {_name(t)} on machine {t.machine_id} reads register r{rid} of {_name(producer)} on machine "
                    f"{producer.machine_id}; a register crosses machines only through a CopyCommNet task")
            if regst.is_ctrl or t.is_boxing or producer.is_boxing:
                continue
            for lbn in _lbns_read(t, rid, regst.lbi2blob_desc):
                src, dst = _sbp(producer, lbn, out=True), _sbp(t, lbn, out=False)
                if _whole(producer, src) and _whole(t, dst):
                    continue
                if (producer.parallel_num, producer.parallel_id, src) != (t.parallel_num, t.parallel_id, dst):
                    raise CompileError(
                        f"task {_name(t)} reads blob {lbn!r} as {dst} directly from {_name(producer)}, which holds "
                        f"it as {src}; the two devices' pieces differ, so boxing must sit between them")
        if t.task_type in ("SliceBoxing", "BoxingZeros"):
            _check_boxing(t, regsts)


def _name(t: TaskProto) -> str:
    where = f" [{t.parallel_id}/{t.parallel_num}]" if t.parallel_num > 1 else ""
    return f"{t.name}{where}"


def _lbns_read(t: TaskProto, rid: int, blobs: Mapping[str, object]) -> list[str]:
    """The blobs ``t``'s op reads from register ``rid``. Where the Plan records each argument's register, by that
    record: a register of a multi-output op holds blobs the task reads through boxing from another register.
    Otherwise (no record, or one naming a register the task does not consume) the runtime binds by blob name
    (runtime/binding.py ``input_regsts``), so every blob of the register is read."""
    if not t.exec_sequence:
        return []
    lbns = t.exec_sequence[0].input_lbns
    if len(t.input_regst_ids) == len(lbns) and set(t.input_regst_ids) <= set(t.consumed_ids):
        return [lbn for lbn, read_from in zip(lbns, t.input_regst_ids) if read_from == rid]
    return [lbn for lbn in lbns if lbn in blobs]


def _sbp(t: TaskProto, lbn: str, out: bool) -> SbpParallel | None:
    """The SBP task ``t``'s op has for ``lbn`` (None: it runs on one device, or records none)."""
    sig = t.sbp_signature
    if sig is None:
        return None
    op = t.exec_sequence[0]
    if out:
        return sig.bn_in_op2sbp_parallel.get(lbn.rpartition("/")[2])
    for bn, in_lbn in input_bns(op.inputs, get_op_def(op.op_type).system):
        if in_lbn == lbn:
            return sig.bn_in_op2sbp_parallel.get(bn)
    return None


def _whole(t: TaskProto, sbp: SbpParallel | None) -> bool:
    return t.parallel_num == 1 or (sbp is not None and sbp.is_broadcast)


def _check_boxing(t: TaskProto, regsts: Mapping[int, RegstDesc]) -> None:
    attrs = t.exec_sequence[0].attrs
    (out,) = t.produced_regst_desc["out"].lbi2blob_desc.values()
    out_box = Box(tuple(map(tuple, attrs["out_slice"])))
    if out.elem_cnt != out_box.elem_cnt:
        raise CompileError(f"boxing task {t.name} writes {out} but its slice {out_box} holds {out_box.elem_cnt} "
                           "elements")
    for i, ranges in enumerate(attrs["in_slice"]):
        box = Box(tuple(map(tuple, ranges)))
        (rid,) = t.consumed_regst_desc_id[f"in_{i}"]
        desc = regsts[rid].lbi2blob_desc[attrs["lbi"]]
        if t.task_type == "SliceBoxing" and desc.elem_cnt != box.elem_cnt:
            raise CompileError(f"boxing task {t.name} reads {desc} as input {i}, but its slice {box} holds "
                               f"{box.elem_cnt} elements")


def _check_physical_shapes(plan: Plan, job_set: JobSet) -> None:
    for t in plan.tasks:
        if t.is_boxing or t.job_id >= len(job_set.jobs) or not t.exec_sequence:
            continue
        job = job_set.jobs[t.job_id]
        op = t.exec_sequence[0]
        for regst in t.produced_regst_desc.values():
            for lbn, desc in regst.lbi2blob_desc.items():
                if lbn not in job.blob_descs or lbn not in op.output_lbns:
                    continue
                logical = logical_desc(job, lbn)
                sbp = _sbp(t, lbn, out=True) if t.parallel_num > 1 else one_device_sbp(logical)
                if sbp is None:
                    raise CompileError(f"task {_name(t)} runs on {t.parallel_num} devices without an SBP for {lbn!r}")
                want = physical_desc(logical, sbp, t.parallel_id, t.parallel_num)
                if desc != want:
                    raise CompileError(
                        f"task {_name(t)} of job {job.name!r} holds {lbn!r} as {desc}; {sbp} of the logical {logical} "
                        f"on device {t.parallel_id} of {t.parallel_num} is {want} (balanced splitter)")
