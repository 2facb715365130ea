"""GPUs in the Plan: OneFlow's per-device GPU threads (one CUDA stream each), the CopyHd tasks its BuildTaskPath
puts between host and device memory, and the ``mem_case`` of every register.

Thread ids (``IDMgr``, G = gpu_device_num): stream s of GPU ``dev`` is thread ``s * G + dev`` for the six CUDA
work types below; the CPU threads follow at 6G. A copy between zones is built per consumer edge, as
``TaskGraph::BuildTaskPath``: leaving a GPU is a D2H CopyHd on that GPU's D2H thread (into pinned host memory);
reaching a GPU from the host is an H2D CopyHd on its H2D thread, except into an interface op (input, output,
return, variable), which reads the host register straight (pinned). One copy serves every consumer of the same
register (H2D: on the same GPU). ``mem_case``: device memory for what a GPU task produces (``device_cuda:<dev>``),
pinned host memory for what a D2H copy produces and for any host register a GPU task reads
(``host_pinned:<dev>``, OneFlow's PinConsumedRegst), plain ``host`` otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from ..ir import COMPUTE_TASK_TYPES, INTERFACE_OP_TYPES, OpConf, ParallelConf
from ..ir.plan import BOXING_TASK_TYPES

if TYPE_CHECKING:
    from .plan_builder import BuilderRegst, BuilderTask, PlanBuilder

STREAM_NAMES = ("compute", "h2d", "d2h", "nccl", "mix", "decode_h2d")  # OneFlow's CUDA_WORK_TYPE_SEQ
COMPUTE, H2D, D2H = 0, 1, 2
GPU_STREAMS = len(STREAM_NAMES)


def gpu_thrd_id(stream: int, device: int, gpu_device_num: int) -> int:
    """OneFlow's GetGpu{Compute,H2D,D2H,...}ThrdId(device)."""
    return stream * gpu_device_num + device


def gpu_device_of(task: BuilderTask) -> int | None:
    """The GPU a task runs on (its kernels on that GPU's streams), or None for a host task."""
    on_gpu = task.op.parallel_conf.device_tag == "gpu"
    if task.task_type == "CopyHd" or (task.task_type in COMPUTE_TASK_TYPES and on_gpu):
        return task.device_id
    return None


def _exempt_from_h2d(task: BuilderTask) -> bool:
    """An interface op reads a host register where it is (pinned): TryAddCopyH2DTaskTo's exemption."""
    return task.op.op_type in INTERFACE_OP_TYPES


def insert_copy_hd(pb: PlanBuilder) -> None:
    """Route every data edge that crosses between host and a GPU (or between GPUs) through CopyHd tasks; the
    consumer keeps its slot name and reads the same blobs from the copy's register."""
    if not any(gpu_device_of(t) is not None for t in pb.tasks):
        return
    by_id = {t.task_id: t for t in pb.tasks}
    d2h: dict[int, BuilderRegst] = {}  # regst id on a GPU -> the D2H copy's register
    h2d: dict[tuple[int, int], BuilderRegst] = {}  # (host regst id, device) -> the H2D copy's register
    for task in list(pb.tasks):
        if task.task_type == "CopyHd":
            continue
        dst_dev = gpu_device_of(task)
        for ids in task.consumed.values():
            for k, regst_id in enumerate(ids):
                regst = pb.regsts[regst_id]
                if regst.regst_type != "data":
                    continue
                producer = by_id[regst.producer]
                src_dev = gpu_device_of(producer)
                if src_dev == dst_dev:
                    continue  # same zone (one machine: a cross-machine edge already reads a CopyCommNet)
                new = regst
                if src_dev is not None:
                    if regst_id not in d2h:
                        d2h[regst_id] = _copy(pb, producer, regst, "D2H", producer.machine_id, src_dev, by_id)
                    new = d2h[regst_id]
                if dst_dev is not None and not _exempt_from_h2d(task):
                    key = (new.regst_desc_id, dst_dev)
                    if key not in h2d:
                        h2d[key] = _copy(pb, by_id[new.producer], new, "H2D", task.machine_id, dst_dev, by_id)
                    new = h2d[key]
                if new is regst:
                    continue
                ids[k] = new.regst_desc_id
                task.input_regsts = [new.regst_desc_id if r == regst_id else r for r in task.input_regsts]
                regst.consumers.remove(task.task_id)
                new.consumers.append(task.task_id)
    for copy in (*d2h.values(), *h2d.values()):
        # FixRegisterNumRange: a copy's register is read on another stream, so two of them let the next copy
        # overlap the reader. A copy read by a boxing node keeps one: that dates from when boxing nodes bound
        # their arrays once; they now look rotating registers up per act (runtime/binding.setup_boxing), so two would
        # run and would follow OneFlow, but that change waits for a GPU to test it on (a deviation until then)
        if not any(by_id[c].task_type in BOXING_TASK_TYPES for c in copy.consumers):
            copy.register_num = 2


def _copy(pb: PlanBuilder, src: BuilderTask, regst: BuilderRegst, kind: str, machine: int, device: int,
          by_id: dict[int, Any]) -> BuilderRegst:
    lbns = tuple(regst.blobs)
    n = sum(1 for t in pb.tasks if t.task_type == "CopyHd")
    op = OpConf(f"copy_hd_{n}", "copy_hd", {"in": lbns}, {"out": lbns}, {"type": kind},
                ParallelConf("gpu", (f"{machine}:{device}",)), created_by="boxing")
    stream = H2D if kind == "H2D" else D2H
    task = pb.new_task(src.job_id, op, "CopyHd", machine, device, gpu_thrd_id(stream, device, pb.gpu_device_num))
    by_id[task.task_id] = task
    out = pb.regst(task, "copy_out", "data")
    out.blobs.update(regst.blobs)
    task.consume("copy_in", regst)
    return out


def mem_cases(pb: PlanBuilder) -> dict[int, str]:
    """The mem_case of every data register (InitProducedRegstMemCase, then PinConsumedRegstMemCase)."""
    by_id = {t.task_id: t for t in pb.tasks}
    out: dict[int, str] = {}
    for regst in pb.regsts:
        producer = by_id[regst.producer]
        dev = gpu_device_of(producer)
        if producer.task_type == "CopyHd" and producer.op.attrs["type"] == "D2H":
            out[regst.regst_desc_id] = f"host_pinned:{dev}"
        elif dev is not None:
            out[regst.regst_desc_id] = f"device_cuda:{dev}"
        else:
            readers = sorted({d for c in regst.consumers if (d := gpu_device_of(by_id[c])) is not None})
            out[regst.regst_desc_id] = f"host_pinned:{readers[0]}" if readers else "host"
    return out


def common_mem_case(cases: list[str], what: str) -> str:
    """One mem_case for registers sharing a block (GetCommonMemoryCase): device memory only if all are on the same
    device; host registers merge to pinned when any is pinned."""
    kinds = set(cases)
    if len(kinds) == 1:
        return cases[0]
    if any(c.startswith("device_cuda") for c in kinds):
        raise CompileError(f"{what} is shared by registers in different memory ({', '.join(sorted(kinds))}); "
                           "a shared interface blob must live in one memory on each device")
    pinned = sorted(c for c in kinds if c.startswith("host_pinned"))
    return pinned[0] if pinned else "host"
