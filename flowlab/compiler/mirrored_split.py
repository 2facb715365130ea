"""AutoDistributeSplit: a mirrored op reading a consistent S(0) blob reads each device's piece of it, and one
reading a consistent B blob reads it through a DistributeClone.

OneFlow does this while tracing (``JobBuildAndInferCtx::FindOrCreateMirroredLbiFromCompatibleConsistentBlob``):
the consistent blob goes through one op per blob, a DistributeSplit where it lies S(0)
(``System-Mirrored-Blob-Auto-Converted-From-Consistent-Blob-DistributeSplit-<id>``), a DistributeClone where it
lies B (``...-DistributeClone-<id>``, a variable's weights), and the mirrored op and those after it are inferred on
one device's piece, so a mirrored reduction over the batch axis is each device's own. flowlab infers SBP after
tracing, so this pass, the first of a user job's, does the same afterwards: it infers the SBP of the consistent ops
that do not depend on mirrored ones (their choice does not depend on what comes after them), puts a
``distribute_split`` (``distribute_clone``) before each mirrored op reading such a blob lying S(0) (B), and infers
again every op downstream of a split blob (a clone's piece is the whole blob: nothing changes shape). A consistent
identity reading mirrored pieces (the view cast ``flow.cast_to_current_logical_view``) takes them concatenated on
axis 0, as the cast of per-device data does. As in OneFlow, a blob is converted once, on its own placement,
whichever mirrored reader asks first; a reader on other devices (as many) reads device i's piece through a copy.

A blob whose rows do not divide evenly over the devices is left as it was (its pieces would differ in shape, and
a flowlab blob desc is one shape): the mirrored op is inferred on the logical blob, exact where one of its
signatures takes the blob as it lies, and a compile error naming the blob where none does. On one device every
blob lies S(0) in OneFlow (a one-piece split, a copy); flowlab inserts nothing there.
"""

from __future__ import annotations

import dataclasses

from ..errors import OpInferError
from ..ir import BlobDesc, Job, OpConf, ParallelConf
from ..ir.sbp import BROADCAST, split
from ..ops.registry import InferCtx, get_op_def
from .sbp_infer import infer_job_sbp

SPLIT_PREFIX = "System-Mirrored-Blob-Auto-Converted-From-Consistent-Blob-DistributeSplit-"
CLONE_PREFIX = "System-Mirrored-Blob-Auto-Converted-From-Consistent-Blob-DistributeClone-"
KEEPS_CONSISTENT_INPUT = frozenset({"return"})  # a mirrored job's return of a consistent blob gives it as it lies


def auto_distribute_split(job: Job) -> Job:
    mirrored = set(job.mirrored_op_names)
    wanted = _consistent_inputs_of_mirrored_ops(job, mirrored)
    if not wanted:
        return job
    lying = _lying_s0_or_b(job, mirrored, wanted)
    if not lying:
        return job
    ops: list[OpConf] = []
    converted: dict[str, str] = {}  # consistent lbn -> its split's or clone's output (one per blob, OneFlow's cache)
    descs = dict(job.blob_descs)
    names = {op.name for op in job.ops}
    for op in job.ops:
        if op.name in mirrored and op.op_type not in KEEPS_CONSISTENT_INPUT:
            n = op.parallel_conf.parallel_num
            for lbn in op.input_lbns:
                if lbn in lying and lbn not in converted and lying[lbn][1].parallel_num == n:  # else boxing first
                    new_op = _convert_op(lying[lbn][0], op, lying[lbn][1], lbn, names, job.producer_of(lbn).op_type)
                    ops.append(new_op)
                    converted[lbn] = new_op.output_lbns[0]
                    if new_op.op_type == "distribute_clone":  # each device's piece is the whole blob
                        descs[converted[lbn]] = descs[lbn]
            op = op.replace(inputs={arg: tuple(converted.get(lbn, lbn) for lbn in lbns)
                                    for arg, lbns in op.inputs.items()})
        ops.append(op)
    new_names = {op.name for op in ops if op.created_by == "AutoDistributeSplit"}
    new_mirrored = tuple(op.name for op in ops if op.name in mirrored or op.name in new_names)
    return _reinfer(job.replace(ops=tuple(ops), mirrored_op_names=new_mirrored), descs)


def _consistent_inputs_of_mirrored_ops(job: Job, mirrored: set[str]) -> set[str]:
    out: set[str] = set()
    for op in job.ops:
        if (op.name not in mirrored or op.op_type in KEEPS_CONSISTENT_INPUT or op.parallel_conf.parallel_num == 1
                or op.created_by == "AutoDistributeSplit"):  # a conversion made while tracing (JobBuilder)
            continue
        out.update(lbn for lbn in op.input_lbns if lbn.rpartition("/")[0] not in mirrored)
    return out


def _lying_s0_or_b(job: Job, mirrored: set[str], wanted: set[str]) -> dict[str, tuple[str, ParallelConf]]:
    """The wanted blobs on more than one device that lie S(0) with rows dividing evenly (``"distribute_split"``)
    or B (``"distribute_clone"``): lbn -> (the op that converts it, its placement). SBP is inferred on the
    consistent ops that depend on no mirrored op (OneFlow has inferred them by then)."""
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
        sbp = sig.bn_in_op2sbp_parallel.get(bn) if sig is not None else None
        if n > 1 and sbp == split(0) and shape and shape[0] % n == 0:
            out[lbn] = ("distribute_split", producer.parallel_conf)
        elif n > 1 and sbp == BROADCAST:
            out[lbn] = ("distribute_clone", producer.parallel_conf)
    return out


def _convert_op(op_type: str, consumer: OpConf, placement: ParallelConf, lbn: str, names: set[str],
                producer_type: str) -> OpConf:
    """The conversion of ``lbn`` on its producer's placement (OneFlow's ``ParallelDesc4Lbi(lbi)``), whichever
    mirrored reader asked first: a reader on other devices (as many) reads device i's piece through a copy, as
    OneFlow's sub-op i reads sub-blob i."""
    prefix = SPLIT_PREFIX if op_type == "distribute_split" else CLONE_PREFIX
    i = 0
    while f"{prefix}{i}" in names:
        i += 1
    name = f"{prefix}{i}"
    names.add(name)
    # OneFlow's set_is_variable_ref(IsVariableLbi(lbi)): a variable's clone or split is its memory, in place
    attrs = {"axis": 0, "parallel_num": placement.parallel_num, "mirrored": True,
             "is_variable_ref": producer_type == "variable"}
    return OpConf(name, op_type, {"in": (lbn,)}, {"out": (f"{name}/out",)}, attrs, placement,
                  loc=consumer.loc, created_by="AutoDistributeSplit")


def _reinfer(job: Job, descs: dict[str, BlobDesc]) -> Job:
    """Infer the new splits, then again every op that reads a changed blob (in order, so changes flow on)."""
    mirrored, changed = set(job.mirrored_op_names), set()
    for op in job.ops:
        split_here = op.created_by == "AutoDistributeSplit" and op.op_type == "distribute_split"
        if not split_here and not any(lbn in changed for lbn in op.input_lbns):
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
