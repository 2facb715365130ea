"""What a multi-device Plan's view says about devices (issue 24, "several devices readable at a glance"): each task's
device (``cpu:0``, ``gpu:1``; ``machine 1 cpu:0`` where the Plan spans machines), what a boxing task converts and
for whom (``fc1-weight grad: P → B over cpu:0-1``), and the SBP beside an edge's per-device shape
(``S(0) f32[8,4]``). A Plan on one device gets none of these: its view stays as it was."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..ir import Job, ParallelConf


def task_devices(tasks: Sequence[Any]) -> dict[int, str]:
    """task id -> its device, or {} when every task runs on the same one (nothing to tell apart)."""
    placed = {t.task_id: _device(t) for t in tasks if t.exec_sequence}
    if len(set(placed.values())) < 2:
        return {}
    several_machines = len({machine for _tag, machine, _dev in placed.values()}) > 1
    return {tid: (f"machine {m} " if several_machines else "") + f"{tag}:{d}" for tid, (tag, m, d) in placed.items()}


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


def boxing_note(task: Any, job: Job | None) -> str | None:
    """What a boxing task converts, at the job level: ``<blob>: <producer's SBP> → <consumer's SBP> over <devices>``,
    the blob named as a variable's gradient where an optimizer update consumes it. None when the job or its
    signatures cannot say."""
    if job is None or not task.exec_sequence:
        return None
    lbn = str(task.exec_sequence[0].attrs.get("lbi", ""))
    producer, _, bn = lbn.partition("/")
    if not job.has_op(producer):
        return None
    have = _sbp(job, producer, bn)
    for op in job.ops:
        for in_bn in _bns_of(op.inputs, lbn):
            want = _sbp(job, op.name, in_bn)
            moved = op.parallel_conf != job.op(producer).parallel_conf
            if want is not None and (want != have or moved):
                source = f" on {placement_text(job.op(producer).parallel_conf)}" if moved else ""
                return (f"{_blob_name(job, lbn)}: {have or '?'}{source} → {want} over "
                        f"{placement_text(op.parallel_conf)}")
    return None


def _sbp(job: Job, op_name: str, bn: str) -> Any:
    sig = job.sbp_signatures.get(op_name)
    return sig.bn_in_op2sbp_parallel.get(bn) if sig is not None else None


def _blob_name(job: Job, lbn: str) -> str:
    """``fc1-weight grad`` for the gradient an optimizer update applies to variable ``fc1-weight``, else the lbn."""
    for op in job.ops:
        if op.op_type.endswith("_update") and lbn in op.inputs.get("model_diff", ()):
            model = op.inputs.get("model", ("",))[0]
            return f"{model.partition('/')[0]} grad"
    return lbn


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
