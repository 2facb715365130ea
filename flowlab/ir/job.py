"""Job and JobSet: a traced (and later rewritten) job, and all jobs of a session after compilation."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .blob import BlobDesc
from .frozen import FrozenDict, derived
from .op_conf import OpConf, ParallelConf, format_attr, freeze_attr
from .sbp import SbpSignature

JOB_KINDS = ("user", "push", "pull", "model_io", "main")


@dataclass(frozen=True)
class Job:
    name: str
    kind: str  # one of JOB_KINDS
    ops: tuple[OpConf, ...]  # topological order
    blob_descs: Mapping[str, BlobDesc]  # lbn -> desc
    job_conf: Mapping[str, Any] = field(default_factory=FrozenDict)  # job_type, default_data_type, ...
    input_op_names: tuple[str, ...] = ()
    return_op_names: tuple[str, ...] = ()
    # OneFlow's job_parallel_view_conf.op_name2sbp_signature_conf: op name -> the SBP signature chosen for it
    sbp_signatures: Mapping[str, SbpSignature] = field(default_factory=FrozenDict)
    # What the user's hints ask of each op (OneFlow keeps them in the same conf until inference completes it):
    # op name -> a partial signature, from with_distribute, get_variable(distribute=), model_distribute
    sbp_hints: Mapping[str, SbpSignature] = field(default_factory=FrozenDict)
    # OneFlow's job_parallel_view_conf.op_name2is_mirrored_parallel_view: ops traced under the mirrored view
    mirrored_op_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "ops", tuple(self.ops))
        object.__setattr__(self, "blob_descs", FrozenDict(self.blob_descs))
        object.__setattr__(self, "job_conf", freeze_attr(self.job_conf))
        object.__setattr__(self, "input_op_names", tuple(self.input_op_names))
        object.__setattr__(self, "return_op_names", tuple(self.return_op_names))
        object.__setattr__(self, "sbp_signatures", FrozenDict(self.sbp_signatures))
        object.__setattr__(self, "sbp_hints", FrozenDict(self.sbp_hints))
        object.__setattr__(self, "mirrored_op_names", tuple(self.mirrored_op_names))
        if self.kind not in JOB_KINDS:
            raise ValueError(f"job kind {self.kind!r} is not one of {JOB_KINDS}")

    # -- lookups -----------------------------------------------------------------------------------
    @derived
    def _op_index(self) -> FrozenDict[str, OpConf]:
        """name -> op, computed once (ir/frozen.py, ``derived``): passes look ops up by name for every op."""
        index: dict[str, OpConf] = {}
        for op in self.ops:
            index.setdefault(op.name, op)  # the first of a name, as a scan would find it
        return FrozenDict(index)

    def op(self, name: str) -> OpConf:
        op = self._op_index.get(name)
        if op is None:
            raise KeyError(f"job {self.name!r} has no op {name!r}; it has {[o.name for o in self.ops]}")
        return op

    def has_op(self, name: str) -> bool:
        return name in self._op_index

    @property
    def interface_op_names(self) -> tuple[str, ...]:
        """Ops whose output memory other jobs may share: inputs, outputs, returns, variables."""
        return tuple(op.name for op in self.ops if op.op_type in INTERFACE_OP_TYPES)

    def producer_of(self, lbn: str) -> OpConf:
        op_name = lbn.rpartition("/")[0]
        return self.op(op_name)

    def consumers_of(self, op_name: str) -> list[OpConf]:
        prefix = op_name + "/"
        return [
            op
            for op in self.ops
            if any(lbn.startswith(prefix) for lbn in op.input_lbns) or op_name in op.ctrl_in_op_names
        ]

    def replace(self, **changes: Any) -> Job:
        return replace(self, **changes)

    def holds_pieces(self, op_name: str) -> bool:
        """Whether a mirrored op's blob descs are one device's piece rather than the logical blob: see
        ``descends_from_per_device_data``."""
        return descends_from_per_device_data({op.name: op for op in self.ops}, set(self.mirrored_op_names), op_name)

    # -- printing ----------------------------------------------------------------------------------
    def format_op(self, op: OpConf) -> str:
        outs = op.output_lbns
        lhs = ", ".join(f"%{lbn}" for lbn in outs)
        types = ", ".join(str(self.blob_descs[lbn]) if lbn in self.blob_descs else "?" for lbn in outs)
        args = ", ".join(f"%{lbn}" for lbn in op.input_lbns)
        text = f"{lhs} : {types} = {op.op_type}({args})" if outs else f"%{op.name} = {op.op_type}({args})"
        attrs = dict(op.attrs)
        if len(outs) == 1 and outs[0] in self.blob_descs:  # shape/dtype attrs repeat the printed type
            desc = self.blob_descs[outs[0]]
            if attrs.get("shape") == desc.shape and attrs.get("dtype") == desc.dtype:
                del attrs["shape"], attrs["dtype"]
        if attrs:
            text += " {" + ", ".join(f"{k}={format_attr(v)}" for k, v in attrs.items()) + "}"
        if op.ctrl_in_op_names:
            text += " ctrl_in=[" + ", ".join(op.ctrl_in_op_names) + "]"
        if op.parallel_conf != ParallelConf():
            text += f" @{op.parallel_conf}"
        if op.parallel_conf.parallel_num > 1 and op.name in self.sbp_signatures:  # one device: S(0), says nothing
            text += f" sbp={self.sbp_signatures[op.name]}"
        if op.name in self.mirrored_op_names:
            text += " <mirrored>"
        if op.created_by != "user":
            text += f"  <{op.created_by}>"
        if op.loc:
            text += f"  # {op.loc}"
        return text

    def __str__(self) -> str:
        job_type = self.job_conf.get("job_type")
        head = f"job {self.name} ({self.kind}" + (f", {job_type}" if job_type else "") + "):"
        return "\n".join([head, *("  " + self.format_op(op) for op in self.ops)])

    def __repr__(self) -> str:
        return f"<Job {self.name!r} kind={self.kind} ops={len(self.ops)}>"


INTERFACE_OP_TYPES = frozenset({"input", "output", "return", "variable"})


def descends_from_per_device_data(ops: Mapping[str, OpConf], mirrored: Collection[str], op_name: str) -> bool:
    """Whether mirrored op ``op_name`` depends, through mirrored ops, on a mirrored (``ListNumpy``) input. Such an
    op's shapes were inferred from one device's piece, so its blob descs are pieces; a mirrored op that reads only
    consistent blobs was inferred from their logical descs, so its descs are logical (each device holds its S(0)
    slice, or the whole blob where it is B)."""
    seen: set[str] = set()
    todo = [op_name]
    while todo:
        name = todo.pop()
        if name in seen or name not in mirrored:
            continue
        seen.add(name)
        op = ops[name]
        if op.op_type in ("input", "distribute_split"):  # per-device data, or a consistent blob's pieces
            return True
        todo.extend(lbn.rpartition("/")[0] for lbns in op.inputs.values() for lbn in lbns)
    return False


@dataclass(frozen=True)
class JobSet:
    """Every job of a session after compilation; ``job_id`` is the index in ``jobs`` (main job last)."""

    jobs: tuple[Job, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", tuple(self.jobs))

    def __iter__(self) -> Iterator[Job]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)

    @derived
    def _job_ids(self) -> FrozenDict[str, int]:
        ids: dict[str, int] = {}
        for job_id, job in enumerate(self.jobs):
            ids.setdefault(job.name, job_id)
        return FrozenDict(ids)

    def job(self, name: str) -> Job:
        return self.jobs[self.job_id(name)]

    def job_id(self, name: str) -> int:
        job_id = self._job_ids.get(name)
        if job_id is None:
            raise KeyError(f"no job {name!r}; jobs are {[j.name for j in self.jobs]}")
        return job_id

    def of_kind(self, kind: str) -> tuple[Job, ...]:
        return tuple(j for j in self.jobs if j.kind == kind)

    @property
    def shared_interfaces(self) -> dict[str, tuple[str, ...]]:
        """Interface op name -> the jobs that hold an op of that name (only names in two or more jobs)."""
        holders: dict[str, list[str]] = {}
        for job in self.jobs:
            for name in job.interface_op_names:
                holders.setdefault(name, []).append(job.name)
        return {name: tuple(jobs) for name, jobs in holders.items() if len(jobs) > 1}

    def __str__(self) -> str:
        parts = [f"[{i}] {job}" for i, job in enumerate(self.jobs)]
        shared = self.shared_interfaces
        if shared:
            lines = [f"  {name}: {', '.join(jobs)}" for name, jobs in shared.items()]
            parts.append("shared interface blobs:\n" + "\n".join(lines))
        return "\n\n".join(parts)

    def __repr__(self) -> str:
        return f"<JobSet {[j.name for j in self.jobs]}>"
