"""Where each device's piece of a logical blob lies: SBP lookups, logical and physical blob descs.

``S(axis)`` on n devices gives device p the p-th part of ``balanced_split(dim, n)`` on that axis (the slice
boxes of ir/slice_box.py); ``B`` and ``P`` give every device the whole blob (a ``P`` piece is a whole-shaped
addend). A blob on one device is ``S(0)`` as in OneFlow (``InferSbpSignatureIf``), which is the whole blob, so
one rule covers both.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir import BROADCAST, BlobDesc, Job, OpConf, SbpParallel, split
from ..ir.slice_box import Box, box_of, full_box

__all__ = ["Box", "box_of", "full_box", "logical_desc", "one_device_sbp", "physical_desc", "sbp_of"]


def physical_desc(desc: BlobDesc, sbp: SbpParallel, parallel_id: int, parallel_num: int) -> BlobDesc:
    """The blob a device holds of a logical blob (OneFlow's balanced splitter on a split axis)."""
    if not (sbp.is_split and parallel_num > 1):
        return desc
    return BlobDesc(box_of(desc.shape, sbp, parallel_id, parallel_num).shape, desc.dtype, desc.is_dynamic)


def logical_desc(job: Job, lbn: str) -> BlobDesc:
    """The logical blob behind ``lbn``. A mirrored op that descends from per-device data (a ``ListNumpy``
    placeholder) has one device's piece as its blob desc: its S(axis) output over n devices is n such pieces,
    concatenated on that axis (OneFlow's mirrored blob seen consistently). Every other blob's desc is its logical
    one, a mirrored op's too when it reads only consistent blobs (it was inferred from their logical descs;
    multiplying its split axis again would give each device the logical shape)."""
    desc = job.blob_descs[lbn]
    op_name, _, bn = lbn.rpartition("/")
    if op_name not in job.mirrored_op_names:
        return desc
    op = job.op(op_name)
    n = op.parallel_conf.parallel_num
    if n == 1 and op.op_type == "return":  # a mirrored return on cpu 0:0 receives every device's piece
        return logical_desc(job, op.input_lbns[0])
    sig = job.sbp_signatures.get(op_name)
    sbp = sig.bn_in_op2sbp_parallel.get(bn) if sig is not None else None
    if n == 1 or sbp is None or not sbp.is_split or not job.holds_pieces(op_name):
        return desc
    shape = list(desc.shape)
    shape[sbp.axis] *= n
    return BlobDesc(tuple(shape), desc.dtype, desc.is_dynamic)


def one_device_sbp(desc: BlobDesc) -> SbpParallel:
    """One device holds the whole blob; OneFlow calls that S(0) (B for a blob without axes)."""
    return split(0) if desc.shape else BROADCAST


def sbp_of(job: Job, op: OpConf, bn: str, desc: BlobDesc) -> SbpParallel:
    """The SBP of blob ``bn`` of ``op`` as ``job.sbp_signatures`` records it; a one-device op needs none."""
    n = op.parallel_conf.parallel_num
    if n == 1:
        return one_device_sbp(desc)
    where = f" (created at {op.loc})" if op.loc else ""
    sig = job.sbp_signatures.get(op.name)
    if sig is None or bn not in sig.bn_in_op2sbp_parallel:
        have = f"its signature is {sig}" if sig is not None else "the job records no SBP signature for it"
        raise CompileError(
            f"op {op.name!r} ({op.op_type}){where} in job {job.name!r} runs on {n} devices ({op.parallel_conf}) but "
            f"has no SBP for blob {bn!r}; {have}. Every op on several devices needs its signature in "
            "Job.sbp_signatures (the SBP inference pass writes them)")
    sbp = sig[bn]
    if sbp.is_split:
        if sbp.axis >= len(desc.shape):
            raise CompileError(f"op {op.name!r}{where} in job {job.name!r}: blob {bn!r} {desc} has no axis "
                               f"{sbp.axis} to split ({sbp})")
        if desc.shape[sbp.axis] < n:
            raise CompileError(
                f"op {op.name!r}{where} in job {job.name!r}: blob {bn!r} {desc} is split on axis {sbp.axis} of size "
                f"{desc.shape[sbp.axis]} over {n} devices ({op.parallel_conf}); a split axis needs at least one row "
                "per device")
    return sbp
