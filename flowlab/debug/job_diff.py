"""Two versions of a job (before and after a pass, or the same job in two compilations) compared op by op.

Ops are matched by name (a pass keeps the names of the ops it does not replace, and OneFlow names ops by the
user's ``name=`` or a per-job counter). An op is changed when its type, attrs, inputs, control inputs, output
blob descs or SBP signature differ; where it was written (``loc``) and which pass made it are not compared: two
compilations of the same program differ there without differing in what runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Job, JobSet


def _fields(job: Job, name: str) -> dict[str, str]:
    op = job.op(name)
    fields = {"op_type": op.op_type, **{f"attr {k}": str(v) for k, v in op.attrs.items()}}
    for arg, lbns in op.inputs.items():
        fields[f"input {arg}"] = ", ".join(lbns)
    if op.ctrl_in_op_names:
        fields["ctrl_in"] = ", ".join(op.ctrl_in_op_names)
    for lbn in op.output_lbns:
        desc = job.blob_descs.get(lbn)
        fields[f"output {lbn.partition('/')[2]}"] = str(desc) if desc is not None else "?"
    sig = job.sbp_signatures.get(name)
    if sig is not None:  # how the op's blobs lie on its devices (SBP inference sets it): part of what runs
        fields["sbp"] = str(sig)
    return fields


@dataclass(frozen=True)
class OpChange:
    job: str
    op: str
    status: str  # "added" | "removed" | "changed"
    fields: dict[str, tuple[str | None, str | None]]  # for a changed op: field -> (before, after)

    def __str__(self) -> str:
        sign = {"added": "+", "removed": "-", "changed": "~"}[self.status]
        detail = "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in self.fields.items()) if self.status == "changed" else ""
        return f"  {sign} {self.job}/{self.op}" + (f": {detail}" if detail else "")


@dataclass(frozen=True)
class JobDiff:
    """Op-level changes between two job sets (one job each for a pass); ``pairs`` name the ops on both."""

    changes: tuple[OpChange, ...]
    pairs: tuple[tuple[str, str, str], ...]  # (job in a, job in b, op)
    jobs_removed: tuple[str, ...] = ()
    jobs_added: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.changes) for s in ("added", "removed", "changed")}

    def __str__(self) -> str:
        c = self.counts()
        lines = [f"ops: {c['added']} added, {c['removed']} removed, {c['changed']} changed"]
        lines += [f"  - job {j}" for j in self.jobs_removed] + [f"  + job {j}" for j in self.jobs_added]
        return "\n".join(lines + [str(change) for change in self.changes])


def diff_jobs(a: Job | JobSet, b: Job | JobSet) -> JobDiff:
    """Compare two jobs (or two job sets, jobs matched by name), op by op."""
    for name, side in (("a", a), ("b", b)):
        if not isinstance(side, (Job, JobSet)):
            raise TypeError(f"diff_jobs compares two Jobs or two JobSets; {name} is {type(side).__name__}")
    if isinstance(a, Job) != isinstance(b, Job):
        raise TypeError(f"diff_jobs compares like with like; got a {type(a).__name__} and a {type(b).__name__}")
    if isinstance(a, Job) and isinstance(b, Job):
        jobs_a, jobs_b = {"": a}, {"": b}  # one job each: matched whatever their names
    else:
        jobs_a, jobs_b = {j.name: j for j in a}, {j.name: j for j in b}
    changes: list[OpChange] = []
    pairs: list[tuple[str, str, str]] = []
    for key in [k for k in jobs_a if k in jobs_b]:
        ja, jb = jobs_a[key], jobs_b[key]
        names_b = {op.name for op in jb.ops}
        names_a = {op.name for op in ja.ops}
        for op in ja.ops:
            if op.name not in names_b:
                changes.append(OpChange(ja.name, op.name, "removed", {}))
                continue
            pairs.append((ja.name, jb.name, op.name))
            fa, fb = _fields(ja, op.name), _fields(jb, op.name)
            fields = {k: (fa.get(k), fb.get(k)) for k in sorted(fa.keys() | fb.keys()) if fa.get(k) != fb.get(k)}
            if fields:
                changes.append(OpChange(jb.name, op.name, "changed", fields))
        changes += [OpChange(jb.name, op.name, "added", {}) for op in jb.ops if op.name not in names_a]
    return JobDiff(tuple(changes), tuple(pairs), tuple(k for k in jobs_a if k not in jobs_b),
                   tuple(k for k in jobs_b if k not in jobs_a))
