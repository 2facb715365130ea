"""What a multi-device Plan's view says about devices (issue 24, "several devices readable at a glance"): each task's
device (``cpu:0``, ``gpu:1``; ``machine 1 cpu:0`` where the Plan spans machines), what a boxing task converts and
for whom (``fc1-weight grad: P → B over cpu:0-1``), and the SBP beside an edge's per-device shape
(``S(0) f32[8,4]``). A Plan on one device gets none of these: its view stays as it was."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..ir import COMPUTE_TASK_TYPES, Job, ParallelConf
from ..ir.plan import BOXING_TASK_TYPES

# OneFlow's threads besides the device ones: every tick-like task on one TickTock thread, then one thread per
# independent task type (IdManager; compiler/plan_builder.py's thrd_of)
_TICK_TYPES = frozenset({"Tick", "SourceTick", "DeviceTick", "Case", "Esac", "ReentrantLock"})


def task_devices(tasks: Sequence[Any]) -> dict[int, str]:
    """task id -> its device, or {} when every task runs on the same one (nothing to tell apart)."""
    placed = {t.task_id: _device(t) for t in tasks if t.exec_sequence}
    if len(set(placed.values())) < 2:
        return {}
    several_machines = len({machine for _tag, machine, _dev in placed.values()}) > 1
    return {tid: (f"machine {m} " if several_machines else "") + f"{tag}:{d}" for tid, (tag, m, d) in placed.items()}


def lane_names(tasks: Sequence[Any]) -> dict[tuple[int, int], str]:
    """(machine, thread) -> what the thread is, by the tasks on it: ``gpu:0 compute``, ``gpu:1 h2d``, ``cpu compute
    0`` (a CPU device thread: OneFlow spreads every CPU device's compute tasks over them evenly, so the thread names
    no device; each box says its own), ``cpu tick``, ``cpu comm net``, ``cpu WaitAndSendIds``; ``machine 1 / …``
    where the Plan spans machines, ``(thread 7)`` after a name two threads would share."""
    on: dict[tuple[int, int], list[Any]] = {}
    for t in tasks:
        on.setdefault((t.machine_id, t.thrd_id), []).append(t)
    machines = len({m for m, _ in on}) > 1
    cpu_compute: dict[int, int] = {}  # per machine: CPU device threads named so far
    names: dict[tuple[int, int], str] = {}
    for lane in sorted(on):
        ts = on[lane]
        types = {t.task_type for t in ts}
        devices = {_device(t) for t in ts if t.exec_sequence}
        gpus = {d for d in devices if d[0] == "gpu"}
        if types == {"CopyHd"}:
            kinds = sorted({str(t.exec_sequence[0].attrs.get("type", "copy")).lower() for t in ts})
            name = f"{_gpu(gpus)} {'/'.join(kinds)}"
        elif types <= COMPUTE_TASK_TYPES | BOXING_TASK_TYPES - {"CopyCommNet"} and gpus == devices and len(gpus) == 1:
            name = f"{_gpu(gpus)} compute"
        elif types <= COMPUTE_TASK_TYPES | BOXING_TASK_TYPES - {"CopyCommNet"}:
            k = cpu_compute[lane[0]] = cpu_compute.get(lane[0], -1) + 1
            name = f"cpu compute {k}"
        elif types <= _TICK_TYPES:
            name = "cpu tick"
        elif types == {"CopyCommNet"}:
            name = "cpu comm net"
        else:
            name = "cpu " + "/".join(sorted(types))
        names[lane] = (f"machine {lane[0]} / " if machines else "") + name
    shared = {n for n in names.values() if list(names.values()).count(n) > 1}
    return {lane: f"{n} (thread {lane[1]})" if n in shared else n for lane, n in names.items()}


def boxing_causes(tasks: Sequence[Any], task_by_id: Mapping[int, Any]) -> dict[tuple[int, str], list[int]]:
    """(job id, op name) -> the boxing tasks that convert what that op reads (its chosen SBP caused them): each
    boxing task, through any boxing tasks after it, to the first task that is not one."""
    out: dict[tuple[int, str], list[int]] = {}
    for task in tasks:
        if not task.is_boxing:
            continue
        todo, seen = [task], {task.task_id}
        while todo:
            for regst in todo.pop().produced_regst_desc.values():
                for cid in regst.consumer_task_ids:
                    consumer = task_by_id.get(cid)
                    if consumer is None or cid in seen:
                        continue
                    seen.add(cid)
                    if consumer.is_boxing:
                        todo.append(consumer)
                    elif consumer.exec_sequence:
                        ids = out.setdefault((consumer.job_id, consumer.exec_sequence[0].name), [])
                        if task.task_id not in ids:
                            ids.append(task.task_id)
    return out


def _gpu(devices: set[tuple[str, int, int]]) -> str:
    return f"gpu:{next(iter(devices))[2]}" if len(devices) == 1 else "gpu"


def _device(task: Any) -> tuple[str, int, int]:
    conf = task.exec_sequence[0].parallel_conf
    devices = conf.devices
    machine, device = devices[task.parallel_id] if task.parallel_id < len(devices) else devices[0]
    return conf.device_tag, machine, device


def placement_text(conf: ParallelConf) -> str:
    """``cpu:0-1`` for devices 0 and 1 of machine 0; ``cpu:0:0-1,1:0-1`` over machines (OneFlow's device names)."""
    machines = {m for m, _d in conf.devices}
    if len(machines) == 1:
        return f"{conf.device_tag}:{','.join(name.partition(':')[2] for name in conf.device_names)}"
    return str(conf)


class JobBlobs:
    """One job's lookups for :func:`boxing_note`, built once per job (a Plan has hundreds of boxing tasks): each
    blob's consumers with the name their signature gives it, and the variable whose gradient an optimizer update
    applies (``model_diff`` -> ``model``)."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.ops = {op.name: op for op in job.ops}
        self.consumers: dict[str, list[tuple[Any, list[str]]]] = {}
        self.grad_of: dict[str, str] = {}
        for op in job.ops:
            for arg, lbns in op.inputs.items():
                for i, lbn in enumerate(lbns):
                    # ir.sbp.input_bns: "<arg>_<i>", or "<arg>" for a system op's single blob (without the op
                    # registry, which viz does not import, both are tried)
                    self.consumers.setdefault(lbn, []).append((op, [f"{arg}_{i}", arg]))
            if op.op_type.endswith("_update") and op.inputs.get("model"):
                for lbn in op.inputs.get("model_diff", ()):
                    self.grad_of.setdefault(lbn, op.inputs["model"][0].partition("/")[0])


def boxing_note(task: Any, blobs: JobBlobs | None) -> str | None:
    """What a boxing task converts, at the job level: ``<blob>: <producer's SBP> → <consumer's SBP> over <devices>``,
    the blob named as a variable's gradient where an optimizer update consumes it. None when the job or its
    signatures cannot say."""
    if blobs is None or not task.exec_sequence:
        return None
    job = blobs.job
    lbn = str(task.exec_sequence[0].attrs.get("lbi", ""))
    producer, _, bn = lbn.partition("/")
    if producer not in blobs.ops:
        return None
    have, where = _sbp(job, producer, [bn]), blobs.ops[producer].parallel_conf
    for op, bns in blobs.consumers.get(lbn, ()):
        want = _sbp(job, op.name, bns)
        moved = op.parallel_conf != where
        if want is not None and (want != have or moved):
            source = f" on {placement_text(where)}" if moved else ""
            name = f"{blobs.grad_of[lbn]} grad" if lbn in blobs.grad_of else lbn
            return f"{name}: {have or '?'}{source} → {want} over {placement_text(op.parallel_conf)}"
    return None


def _sbp(job: Job, op_name: str, bns: Sequence[str]) -> Any:
    sig = job.sbp_signatures.get(op_name)
    if sig is None:
        return None
    return next((sig.bn_in_op2sbp_parallel[bn] for bn in bns if bn in sig.bn_in_op2sbp_parallel), None)


def edge_sbp(regst: Any, tasks: Mapping[int, Any]) -> str | None:
    """The SBP of the blob a data register carries, as its producer made it or (out of a boxing task) as its
    consumer takes it; None on one device or where no signature says."""
    lbn = next(iter(regst.lbi2blob_desc), None)
    producer = tasks.get(regst.producer_task_id)
    if lbn is None or producer is None:
        return None
    if producer.sbp_signature is not None and producer.parallel_num > 1:
        sbp = producer.sbp_signature.bn_in_op2sbp_parallel.get(lbn.rpartition("/")[2])
        if sbp is not None:
            return str(sbp)
    if producer.is_boxing:
        for tid in regst.consumer_task_ids:
            consumer = tasks.get(tid)
            if consumer is None or consumer.sbp_signature is None or not consumer.exec_sequence:
                continue
            for bn in _bns_of(consumer.exec_sequence[0].inputs, lbn):
                sbp = consumer.sbp_signature.bn_in_op2sbp_parallel.get(bn)
                if sbp is not None:
                    return str(sbp)
    return None


def _bns_of(inputs: Mapping[str, Sequence[str]], lbn: str) -> list[str]:
    """The names an op's signature may give its input ``lbn``: ``<arg>_<i>``, or ``<arg>`` for a system op's
    single blob (ir.sbp.input_bns; without the op registry, which viz does not import, both are tried)."""
    return [bn for arg, lbns in inputs.items() for i, x in enumerate(lbns) if x == lbn
            for bn in (f"{arg}_{i}", arg)]
