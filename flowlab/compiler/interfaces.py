"""Interface ops shared across jobs by name (OneFlow's MergeMemSharedInterfaceMemBlockBetweenJobs).

Every interface op (input, output, return, variable) with the same name in several jobs gets one memory block.
That is how the push job hands an input to the user job and the user job a result to the pull job, and how jobs
share a variable. It is only right when the ops sharing a name play the same role, so before any memory is
planned each op gets its *role*:

* ``variable``: a variable op, in any job (the same variable in two jobs is one variable, as in OneFlow);
* ``input``: a user job's placeholder, and the push job's output op that fills it;
* ``return``: a user job's return op, and the pull job's input op that reads it.

A name with two roles (a variable ``Input_0`` and a placeholder ``Input_0``), or an input or return owned by two
user jobs, would let one job silently overwrite another's blob, so it is a compile error naming both jobs.
Same-named ops must also agree on blob desc and placement (OneFlow's FilterOpName2ParallelBlobConf).
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir import INTERFACE_OP_TYPES, BlobDesc, Job, OpConf
from .slices import logical_desc

ROLE_WORDS = {"variable": "a variable", "input": "an input (placeholder)", "return": "a return",
              "output": "an output"}


def interface_role(job: Job, op: OpConf) -> str:
    """The role an interface op plays for the blob its name stands for (see the module docstring)."""
    if op.op_type == "variable":
        return "variable"
    if job.kind == "push" and op.op_type == "output":
        return "input"
    if job.kind == "pull" and op.op_type == "input":
        return "return"
    return op.op_type


def _owns(job: Job, role: str) -> bool:
    """Whether ``job`` defines the blob (a user job's input or return), rather than feeding or reading it."""
    return role != "variable" and job.kind not in ("push", "pull")


def check_interfaces(jobs: list[Job]) -> None:
    """Raise CompileError when same-named interface ops would share memory wrongly (see the module docstring)."""
    seen: dict[str, tuple[str, str, BlobDesc, str]] = {}  # name -> (job, role, desc, placement)
    owners: dict[str, tuple[str, str]] = {}  # input/return name -> (user job, role)
    for job in jobs:
        for op in job.ops:
            if op.op_type not in INTERFACE_OP_TYPES:
                continue
            role = interface_role(job, op)
            if _owns(job, role):
                if op.name in owners:
                    other_job, other_role = owners[op.name]
                    _role_clash(op.name, other_job, other_role, job.name, role)
                owners[op.name] = (job.name, role)
            desc = logical_desc(job, op.output_lbns[0])  # a mirrored blob: its pieces together
            placement = str(op.parallel_conf)
            if op.name not in seen:
                seen[op.name] = (job.name, role, desc, placement)
                continue
            other_job, other_role, other_desc, other_placement = seen[op.name]
            if other_role != role:
                _role_clash(op.name, other_job, other_role, job.name, role)
            if (other_desc, other_placement) != (desc, placement):
                raise CompileError(
                    f"interface blob {op.name!r} differs between jobs: {other_desc} on {other_placement} in "
                    f"{other_job!r} but {desc} on {placement} in {job.name!r}; ops sharing a name share memory, "
                    "so they must agree (e.g. give variables of different shapes different names)"
                )


def _role_clash(name: str, job_a: str, role_a: str, job_b: str, role_b: str) -> None:
    raise CompileError(
        f"interface op {name!r} is {ROLE_WORDS.get(role_a, role_a)} in job {job_a!r} and "
        f"{ROLE_WORDS.get(role_b, role_b)} in job {job_b!r}; interface ops with the same name share one memory "
        "block, so one job would overwrite the other's blob. Give one of them another name."
    )
