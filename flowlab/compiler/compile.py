"""Compile a session's traced user jobs into a JobSet and a Plan (OneFlow's CompileAndMergePlanOnMaster)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import CompileError
from ..ir import Job, JobSet, OpConf, Plan
from .autograd import add_lbi_diff_watcher_op_confs, generate_backward_and_optimizer
from .mirrored_split import auto_distribute_split
from .optimizer_placement import check_not_sharing_moved_variables, optimizer_placement_optimization
from .passes import JOB_COMPLETER, JobPass, PassRecord, run_pipeline
from .plan_builder import build_plan
from .sbp_infer import infer_sbp_signatures, interface_sbp
from .slices import logical_desc
from .split_sparse_xent import split_sparse_softmax_cross_entropy
from .system_jobs import make_model_io_jobs, make_pull_job, make_push_job
from .train_passes import auto_learning_rate, auto_train_step
from .verify_job import check_job

# User-job passes (LazyJobBuildAndInferCtx::Complete), in OneFlow order. A pass that does not apply to a job
# (the training passes on a predict job) returns it unchanged and is still recorded.
USER_JOB_PASSES: list[tuple[str, JobPass]] = [
    ("AutoDistributeSplit", auto_distribute_split),  # OneFlow does it while tracing: shapes depend on it
    ("OptimizerPlacementOptimizationPass", optimizer_placement_optimization),
    ("AutoTrainStep", auto_train_step),
    ("AutoLearningRate", auto_learning_rate),
    ("GenerateBackwardAndOptimizerOpConfs", generate_backward_and_optimizer),
    ("SplitSparseSoftmaxCrossEntropyOpPass", split_sparse_softmax_cross_entropy),
    ("AddLbiDiffWatcherOpConfs", add_lbi_diff_watcher_op_confs),
]

# Runs after the train passes and the ticks, so every op a job will have gets its signature.
SBP_PASS: tuple[str, JobPass] = ("InferSbpSignatures", infer_sbp_signatures)


@dataclass(frozen=True)
class CompileResult:
    job_set: JobSet
    plan: Plan
    passes: tuple[PassRecord, ...]
    boxing_log: Mapping[int, tuple[str, ...]] = field(default_factory=dict)  # job_id -> CSV rows (debug mode)
    # (cpu_device_num, gpu_device_num) the Plan was built for: flow.debug.rewrites builds it again, recording
    # each stage (debug/rewrites.py), so that compile records none
    device_nums: tuple[int, int] = (1, 0)


def compile_job_set(user_jobs: Sequence[Job]) -> tuple[list[Job], list[PassRecord]]:
    """The passes of every user job, then the system jobs with theirs (no main job, no plan)."""
    records: list[PassRecord] = []
    completed_user = []
    for job in user_jobs:
        job, recs = run_pipeline(job, [*USER_JOB_PASSES, *JOB_COMPLETER, SBP_PASS], made_by="as traced")
        records.extend(recs)
        completed_user.append(watch_pieces(job))
    check_not_sharing_moved_variables(completed_user)
    system: list[Job] = []
    for job in completed_user:
        # A mirrored placeholder or return is one piece per device: its push and pull jobs move the pieces
        # together (the pushed list concatenated, the pulled blob split back into the list ListNumpy returns).
        for name in job.input_op_names:
            op = job.op(name)
            system.append(make_push_job(op, logical_desc(job, op.output_lbns[0])))
        for name in job.return_op_names:
            op = job.op(name)
            desc = logical_desc(job, op.output_lbns[0])
            parts, axis = _mirrored_pieces(job, op) if name in job.mirrored_op_names else (0, 0)
            system.append(make_pull_job(op, desc, parts, axis))
    variables, var_descs, seen = [], {}, set()
    for job in completed_user:
        for op in job.ops:
            if op.op_type == "variable" and op.name not in seen:
                seen.add(op.name)
                variables.append(op)
                var_descs[op.name] = job.blob_descs[op.output_lbns[0]]
    if variables:
        system.extend(make_model_io_jobs(variables, var_descs))
    # System jobs share interface blobs with user jobs, per device: their twins take the user jobs' SBP.
    forced = interface_sbp(completed_user)
    system_sbp = (SBP_PASS[0], functools.partial(infer_sbp_signatures, forced=forced))
    completed_system = []
    for job in system:
        job, recs = run_pipeline(job, [*JOB_COMPLETER, system_sbp], made_by="as built by the system-job builder")
        records.extend(recs)
        completed_system.append(job)
    return [*completed_user, *completed_system], records


def compile_jobs(user_jobs: Sequence[Job], cpu_device_num: int = 1, gpu_device_num: int = 0) -> CompileResult:
    jobs, records = compile_job_set(user_jobs)
    boxing_log: dict[int, list[str]] = {}
    main, plan = build_plan(jobs, cpu_device_num, boxing_log, gpu_device_num)
    check_job(main, "as built by the plan builder")
    main, recs = run_pipeline(main, [SBP_PASS], made_by="as built by the plan builder")
    records.extend(recs)
    return CompileResult(JobSet((*jobs, main)), plan, tuple(records),
                         {job_id: tuple(rows) for job_id, rows in boxing_log.items()}, (cpu_device_num, gpu_device_num))


def watch_pieces(job: Job) -> Job:
    """A watch whose handler asks for tp.ListNumpy gets its blob per device, cut as a mirrored return is (OneFlow's
    ``numpy_list()`` of the watched blob); a consistent blob is one local blob, a list of one."""
    changed = {}
    for op in job.ops:
        if op.op_type == "foreign_watch" and op.attrs["as_list"]:
            mirrored = job.producer_of(op.input_lbns[0]).name in job.mirrored_op_names
            parts, axis = _mirrored_pieces(job, op) if mirrored else (0, 0)
            parts, axis = (parts, axis) if parts else (1, None)
            changed[op.name] = op.replace(attrs={**op.attrs, "mirrored_parts": parts, "mirrored_axis": axis})
    return job.replace(ops=tuple(changed.get(op.name, op) for op in job.ops)) if changed else job


def _mirrored_pieces(job: Job, ret: OpConf) -> tuple[int, int | None]:
    """How a mirrored return gives back its devices' blobs (OneFlow returns the mirrored list, one blob per
    device): (device count, the axis the pulled logical blob is cut on, balanced as OneFlow's splitter cuts it),
    or None for the axis when the blob lies B, every device holding the whole blob; (0, 0) on one device."""
    lbn = ret.input_lbns[0]
    producer = job.producer_of(lbn)
    n = producer.parallel_conf.parallel_num
    sig = job.sbp_signatures.get(producer.name)
    sbp = sig.bn_in_op2sbp_parallel.get(lbn.rpartition("/")[2]) if sig is not None else None
    if n == 1 or sbp is None:
        return 0, 0
    if sbp.is_split and (sbp.axis == 0 or producer.name in job.mirrored_op_names):
        return n, sbp.axis
    if sbp.is_broadcast:
        return n, None
    if producer.name not in job.mirrored_op_names:
        # a consistent P (or S(k>0)) blob returned by a mirrored job comes back whole, as one array: no device
        # holds its own (OneFlow refuses it: only B and S(0) consistent blobs convert to mirrored ones)
        return 0, 0
    what = "a tp.ListNumpy watch" if ret.op_type == "foreign_watch" else "mirrored return"
    raise CompileError(
        f"{ret.loc + ': ' if ret.loc else ''}{what} {ret.name!r} of job {job.name!r} returns {lbn!r}, "
        f"which lies {sbp} on {producer.parallel_conf}: each device holds a partial sum, not its own result, so "
        "there is no device's own blob to give back (a mirrored return is cut per device from an S blob, or "
        "copied to each from a B one). Feed the op per-device data (tp.ListNumpy placeholders) so that each device "
        "computes its own result")
