"""The recorded pass pipeline: each pass is a function Job -> Job; every run is kept as a PassRecord."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..ir import Job, OpConf
from .verify_job import check_job

JobPass = Callable[[Job], Job]


@dataclass(frozen=True)
class PassRecord:
    """One pass applied to one job: what it saw, what it made, and which ops it added or removed."""

    name: str
    job_name: str
    before: Job
    after: Job

    @property
    def added(self) -> tuple[str, ...]:
        old = {op.name for op in self.before.ops}
        return tuple(op.name for op in self.after.ops if op.name not in old)

    @property
    def removed(self) -> tuple[str, ...]:
        new = {op.name for op in self.after.ops}
        return tuple(op.name for op in self.before.ops if op.name not in new)

    @property
    def changed(self) -> tuple[str, ...]:
        """Ops present before and after whose conf differs (e.g. a ctrl edge added)."""
        old = {op.name: op for op in self.before.ops}
        return tuple(op.name for op in self.after.ops if op.name in old and old[op.name] != op)

    @property
    def sbp_changed(self) -> tuple[str, ...]:
        """Ops whose recorded SBP signature the pass set or changed."""
        old = self.before.sbp_signatures
        return tuple(name for name, sig in self.after.sbp_signatures.items() if old.get(name) != sig)

    def __str__(self) -> str:
        parts = [f"{self.name} on {self.job_name}:"]
        for label, names in (("+", self.added), ("-", self.removed), ("~", self.changed)):
            if names:
                parts.append(f"{label}[{', '.join(names)}]")
        if self.sbp_changed:
            parts.append(f"sbp[{len(self.sbp_changed)} ops]")
        if len(parts) == 1:
            parts.append("no change")
        return " ".join(parts)


def run_pipeline(job: Job, pipeline: Sequence[tuple[str, JobPass]], made_by: str = "as given"
                 ) -> tuple[Job, list[PassRecord]]:
    """Apply the passes in order, recording each; the job is verified as given (``made_by`` says where it came
    from) and after every pass, so a pass that breaks it fails naming the pass, the job and the op."""
    check_job(job, made_by)
    records = []
    for name, job_pass in pipeline:
        after = job_pass(job)
        if after is not job:  # a pass that does not apply returns the job it was given, verified already
            check_job(after, f"after pass {name!r}")
        records.append(PassRecord(name, job.name, job, after))
        job = after
    return job, records


# -- JobCompleter passes that every job gets: ticks bracketing one run of the job ----------------------
SOURCE_TICK = "System-AutoTick-SourceTick"
SINK_TICK = "System-AutoTick-SinkTick"


def auto_source_tick(job: Job) -> Job:
    """Every op with no inputs waits for the job's source tick (the critical section's start)."""
    tick = OpConf(SOURCE_TICK, "source_tick", created_by="AutoSourceTick")
    ops = [tick]
    for op in job.ops:
        if not op.input_lbns and not op.ctrl_in_op_names:
            op = op.replace(ctrl_in_op_names=(SOURCE_TICK,))
        ops.append(op)
    return job.replace(ops=tuple(ops))


def auto_sink_tick(job: Job) -> Job:
    """The job's sink tick waits for every op whose outputs nobody in the job consumes."""
    consumed = {lbn.rpartition("/")[0] for op in job.ops for lbn in op.input_lbns}
    consumed |= {name for op in job.ops for name in op.ctrl_in_op_names}
    sinks = tuple(op.name for op in job.ops if op.name not in consumed and op.op_type != "source_tick")
    tick = OpConf(SINK_TICK, "sink_tick", ctrl_in_op_names=sinks, created_by="AutoSinkTick")
    return job.replace(ops=(*job.ops, tick))


JOB_COMPLETER: tuple[tuple[str, JobPass], ...] = (
    ("AutoSourceTick", auto_source_tick),
    ("AutoSinkTick", auto_sink_tick),
)
