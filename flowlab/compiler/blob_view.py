"""A traced blob's batch axis and split axis as its producer lies, for ``blob.batch_axis`` / ``blob.split_axis``
while a job is being traced. OneFlow infers both when each op is added (JobBuildAndInferCtx::GetBatchAxis,
GetSplitAxisFromProducerView); flowlab infers them in the InferSbpSignatures pass, so a query runs that inference
on the job traced so far: the same rules, the same answer the compiled job will show."""

from __future__ import annotations

from ..ir import Job
from .sbp_infer import JobSbp


def producer_view(job: Job, lbn: str) -> tuple[int | None, int | None]:
    """(batch axis, split axis) of ``lbn`` in ``job``; None where the blob has none (is not split, or is not
    batched)."""
    state = JobSbp(job, {})
    producer = job.producer_of(lbn).name
    for op in job.ops:
        state.infer(op)
        if op.name == producer:  # what comes after it cannot change how it lies
            break
    sbp = state.sbp[lbn]
    return state.batch_axis.get(lbn), (sbp.axis if sbp.is_split else None)


__all__ = ["producer_view"]
