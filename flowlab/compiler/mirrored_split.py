"""AutoDistributeSplit: a mirrored op reading a consistent S(0) blob reads each device's piece of it.

OneFlow does this while tracing (``JobBuildAndInferCtx::FindOrCreateMirroredLbiFromCompatibleConsistentBlob``):
the consistent blob goes through one DistributeSplit op per blob
(``System-Mirrored-Blob-Auto-Converted-From-Consistent-Blob-DistributeSplit-<id>``), and the mirrored op and
those after it are inferred on one device's piece, so a mirrored reduction over the batch axis is each device's
own. flowlab infers SBP after tracing, so this pass, the first of a user job's, does the same afterwards: it
infers the SBP of the consistent ops that do not depend on mirrored ones (their choice does not depend on what
comes after them), puts a ``distribute_split`` before each mirrored op reading such a blob lying S(0), and infers
again every op downstream of a changed blob. A consistent identity reading mirrored pieces (the view cast
``flow.cast_to_current_logical_view``) takes them concatenated on axis 0, as the cast of per-device data does.

A blob whose rows do not divide evenly over the devices is left as it was (its pieces would differ in shape, and
a flowlab blob desc is one shape): the mirrored op is inferred on the logical blob, exact where one of its
signatures takes the blob as it lies, and a compile error naming the blob where none does.
"""

from __future__ import annotations

import dataclasses

from ..errors import OpInferError
from ..ir import BlobDesc, Job, OpConf, ParallelConf
from ..ir.sbp import split
from ..ops.registry import InferCtx, get_op_def
from .sbp_infer import infer_job_sbp

SPLIT_PREFIX = "System-Mirrored-Blob-Auto-Converted-From-Consistent-Blob-DistributeSplit-"
KEEPS_CONSISTENT_INPUT = frozenset({"return"})  # a mirrored job's return of a consistent blob gives it as it lies


def auto_distribute_split(job: Job) -> Job:
    mirrored = set(job.mirrored_op_names)
    wanted = _consistent_inputs_of_mirrored_ops(job, mirrored)
    if not wanted:
        return job
    s0 = _lying_s0(job, mirrored, wanted)
    if not s0:
        return job
    ops: list[OpConf] = []
    splits: dict[str, str] = {}  # consistent lbn -> its DistributeSplit's output (one per blob, as OneFlow's cache)
    descs = dict(job.blob_descs)
    names = {op.name for op in job.ops}
    for op in job.ops:
        if op.name in mirrored and op.op_type not in KEEPS_CONSISTENT_INPUT:
            n = op.parallel_conf.parallel_num
            for lbn in op.input_lbns:
                if lbn in s0 and lbn not in splits and s0[lbn] == op.parallel_conf:  # else boxing moves it first
                    split_op = _split_op(job, op, lbn, n, names)
                    ops.append(split_op)
                    splits[lbn] = split_op.output_lbns[0]
            op = op.replace(inputs={arg: tuple(splits.get(lbn, lbn) if lbn in s0 else lbn for lbn in lbns)
                                    for arg, lbns in op.inputs.items()})
        ops.append(op)
    split_names = {op.name for op in ops if op.created_by == "AutoDistributeSplit"}
    new_mirrored = tuple(op.name for op in ops if op.name in mirrored or op.name in split_names)
    return _reinfer(job.replace(ops=tuple(ops), mirrored_op_names=new_mirrored), descs)


def _consistent_inputs_of_mirrored_ops(job: Job, mirrored: set[str]) -> set[str]:
    out = set()
    for op in job.ops:
        if op.name not in mirrored or op.op_type in KEEPS_CONSISTENT_INPUT or op.parallel_conf.parallel_num == 1:
            continue
        out.update(lbn for lbn in op.input_lbns if lbn.rpartition("/")[0] not in mirrored)
    return out


def _lying_s0(job: Job, mirrored: set[str], wanted: set[str]) -> dict[str, ParallelConf]:
    """The wanted blobs that lie S(0) over more than one device with rows dividing evenly: lbn -> placement.
    SBP is inferred on the consistent ops that depend on no mirrored op (OneFlow has inferred them by then)."""
    after_mirrored = set(mirrored)
    for op in job.ops:
        if any(lbn.rpartition("/")[0] in after_mirrored for lbn in op.input_lbns):
            after_mirrored.add(op.name)
    before = tuple(op for op in job.ops if op.name not in after_mirrored)
    sigs = infer_job_sbp(job.replace(ops=before, mirrored_op_names=()))[0].sbp_signatures
    out = {}
    for lbn in wanted:
        name, _, bn = lbn.rpartition("/")
        producer = job.op(name)
        sig, shape = sigs.get(name), job.blob_descs[lbn].shape
        n = producer.parallel_conf.parallel_num
        if (sig is not None and sig.bn_in_op2sbp_parallel.get(bn) == split(0) and n > 1 and shape
                and shape[0] % n == 0):
            out[lbn] = producer.parallel_conf
    return out


def _split_op(job: Job, consumer: OpConf, lbn: str, n: int, names: set[str]) -> OpConf:
    i = 0
    while f"{SPLIT_PREFIX}{i}" in names:
        i += 1
    name = f"{SPLIT_PREFIX}{i}"
    names.add(name)
    attrs = {"axis": 0, "parallel_num": n, "mirrored": True}
    return OpConf(name, "distribute_split", {"in": (lbn,)}, {"out": (f"{name}/out",)}, attrs, consumer.parallel_conf,
                  loc=consumer.loc, created_by="AutoDistributeSplit")


def _reinfer(job: Job, descs: dict[str, BlobDesc]) -> Job:
    """Infer the new splits, then again every op that reads a changed blob (in order, so changes flow on)."""
    mirrored, changed = set(job.mirrored_op_names), set()
    for op in job.ops:
        if op.created_by != "AutoDistributeSplit" and not any(lbn in changed for lbn in op.input_lbns):
            continue
        op_def = get_op_def(op.op_type)
        in_descs = {arg: tuple(descs[lbn] for lbn in lbns) for arg, lbns in op.inputs.items()}
        piece = in_descs["in"][0] if op.op_type == "identity" else None
        if piece is not None and piece.shape and op.name not in mirrored and op.input_lbns[0].rpartition("/")[0] \
                in mirrored:  # the view cast: the consistent blob of the pieces, joined on axis 0
            n = job.producer_of(op.input_lbns[0]).parallel_conf.parallel_num
            in_descs = {"in": (dataclasses.replace(piece, shape=(piece.shape[0] * n, *piece.shape[1:])),)}
        try:
            out_descs = op_def.infer(InferCtx(op.name, op.op_type, in_descs, dict(op.attrs)))
        except OpInferError as err:
            where = f"{op.loc}: " if op.loc else ""
            raise OpInferError(f"{where}op {op.name!r} ({op.op_type}) inferred again on one device's piece, since a "
                               "mirrored op before it reads each device's piece of a consistent S(0) blob (OneFlow's "
                               f"DistributeSplit): {err}") from None
        for arg, lbns in op.outputs.items():
            for lbn, desc in zip(lbns, out_descs.get(arg, [])):
                descs[lbn] = desc
                changed.add(lbn)  # a piece now, even where its shape is the one traced (a view cast joins it)
    return job.replace(blob_descs=descs)
