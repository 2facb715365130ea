"""Job verifier: the invariants every later stage relies on, checked after every pass and on every system job.

A job is well formed when its op names are unique, every lbn is produced once, by the op it names, and has a
complete blob desc (a shape of non-negative ints and a dtype), its ops are in topological order (every input lbn
and every ctrl_in op is defined by an earlier op of the same job; interface and variable ops are ops of the job,
so they are no exception), and its interface lists name ops it holds. A pass that breaks one of these fails here,
at the pass, instead of as a confusing error in the plan builder or the runtime.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir import BlobDesc, DType, Job, OpConf
from ..ir.sbp import input_bns, output_bns
from ..ops.registry import get_op_def

_SHOWN = 20


class JobVerifyError(CompileError):
    """A job broke one of the invariants of ``check_job``; the message names the stage, the job and the op."""


def _problems(job: Job) -> list[tuple[OpConf | None, str]]:
    problems: list[tuple[OpConf | None, str]] = []
    defined_ops: set[str] = set()
    producer: dict[str, str] = {}
    all_ops = {op.name for op in job.ops}
    for op in job.ops:
        if op.name in defined_ops:
            problems.append((op, "its name is used by an earlier op of the job too"))
        for lbn in op.input_lbns:
            if lbn not in producer:
                later = lbn.rpartition("/")[0] in all_ops and lbn.rpartition("/")[0] not in defined_ops
                problems.append((op, f"input {lbn!r} is " + (
                    "produced by a later op (the ops are not in topological order)" if later
                    else "produced by no op of the job")))
        for name in op.ctrl_in_op_names:
            if name not in defined_ops:
                problems.append((op, f"ctrl_in op {name!r} is " + (
                    "a later op (the ops are not in topological order)" if name in all_ops
                    else "not an op of the job")))
        for lbn in op.output_lbns:
            if lbn in producer:
                problems.append((op, f"output {lbn!r} is already produced by op {producer[lbn]!r}"))
            if lbn.rpartition("/")[0] != op.name:
                problems.append((op, f"output {lbn!r} does not name its producer (expected '{op.name}/<blob>')"))
            producer[lbn] = op.name
            problems.extend((op, p) for p in _desc_problems(lbn, job.blob_descs.get(lbn)))
        defined_ops.add(op.name)
    for label, names in (("input_op_names", job.input_op_names), ("return_op_names", job.return_op_names),
                         ("mirrored_op_names", job.mirrored_op_names)):
        problems.extend((None, f"{label} names {n!r}, which is not an op of the job") for n in names
                        if n not in all_ops)
    return problems + _sbp_problems(job, all_ops)


def _sbp_problems(job: Job, all_ops: set[str]) -> list[tuple[OpConf | None, str]]:
    """A recorded signature (or hint) belongs to an op of the job, and a signature names exactly its blobs: the
    plan builder reads them per blob."""
    problems: list[tuple[OpConf | None, str]] = []
    for label, table in (("sbp_signatures", job.sbp_signatures), ("sbp_hints", job.sbp_hints)):
        problems.extend((None, f"{label} has a signature for {name!r}, which is not an op of the job")
                        for name in table if name not in all_ops)
    for op in job.ops:
        if op.name not in job.sbp_signatures:
            continue
        system = get_op_def(op.op_type).system
        bns = sorted(bn for bn, _ in (*input_bns(op.inputs, system), *output_bns(op.outputs)))
        named = sorted(job.sbp_signatures[op.name].bn_in_op2sbp_parallel)
        if named != bns:
            problems.append((op, f"its SBP signature names blobs {named}; the op has {bns}"))
    return problems


def _desc_problems(lbn: str, desc: BlobDesc | None) -> list[str]:
    if desc is None:
        return [f"output {lbn!r} has no blob desc"]
    if not isinstance(desc, BlobDesc):
        return [f"output {lbn!r} has a {type(desc).__name__} where a BlobDesc belongs"]
    out = []
    if not isinstance(desc.shape, tuple) or not all(isinstance(d, int) and d >= 0 for d in desc.shape):
        out.append(f"output {lbn!r} has blob desc shape {desc.shape!r}; expected a tuple of ints >= 0")
    if not isinstance(desc.dtype, DType):
        out.append(f"output {lbn!r} has blob desc dtype {desc.dtype!r}; expected a flowlab dtype")
    return out


def check_job(job: Job, where: str = "") -> None:
    """Raise JobVerifyError naming ``where`` the job was made (``"after pass 'AutoSinkTick'"``), the job, the op
    and every problem."""
    problems = _problems(job)
    if not problems:
        return
    where = f"{where}, " if where else ""
    lines = [f"  op {op.name!r} ({op.op_type}{', ' + op.loc if op.loc else ''}, created by {op.created_by}): {p}"
             if op is not None else f"  {p}" for op, p in problems[:_SHOWN]]
    if len(problems) > _SHOWN:  # a pass that scrambles a big job would otherwise print thousands of lines
        lines.append(f"  ... and {len(problems) - _SHOWN} more")
    raise JobVerifyError(f"{where}job {job.name!r} is malformed ({len(problems)} problem"
                         f"{'s' if len(problems) > 1 else ''}):\n" + "\n".join(lines))
