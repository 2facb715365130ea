"""The system jobs OneFlow adds around user jobs: push, pull, model I/O (MakePushJob, MakePullJob,
MakeModelIoV2Jobs). Each is a tiny Job whose interface op shares its name, and so its memory, with the
user job's op (see memory.py)."""

from __future__ import annotations

from typing import Any

from ..ir import BlobDesc, Job, OpConf, ParallelConf
from ..ops.registry import InferCtx, get_op_def

PATH_CAPACITY = 4096  # bytes of the path blob the model-io jobs receive (NUL-padded UTF-8)


class SystemJobBuilder:
    """Adds system ops with inference, without the user-facing tracing machinery."""

    def __init__(self, name: str, kind: str) -> None:
        self.name, self.kind = name, kind
        self.ops: list[OpConf] = []
        self.blob_descs: dict[str, BlobDesc] = {}

    def add(self, op_type: str, name: str, inputs: dict[str, tuple[str, ...]] | None = None,
            attrs: dict[str, Any] | None = None, ctrl_in: tuple[str, ...] = (), created_by: str = "system",
            placement: ParallelConf | None = None) -> str:
        op_def = get_op_def(op_type)
        inputs = inputs or {}
        attrs = {**{k: v for k, v in op_def.attrs.items()}, **(attrs or {})}
        in_descs = {arg: tuple(self.blob_descs[lbn] for lbn in lbns) for arg, lbns in inputs.items()}
        out_descs = op_def.infer(InferCtx(name, op_type, in_descs, attrs))
        outputs = {}
        for arg, descs in out_descs.items():
            lbns = (f"{name}/{arg}",) if len(descs) == 1 else tuple(f"{name}/{arg}_{i}" for i in range(len(descs)))
            outputs[arg] = lbns
            self.blob_descs.update(zip(lbns, descs))
        self.ops.append(OpConf(name, op_type, inputs, outputs, attrs, placement or ParallelConf(), ctrl_in,
                               created_by=created_by))
        return outputs["out"][0] if "out" in outputs and len(outputs["out"]) == 1 else name

    def build(self, **kw: Any) -> Job:
        return Job(self.name, self.kind, tuple(self.ops), dict(self.blob_descs), {"job_type": "system"}, **kw)


def foreign_input_buffer(job_name: str) -> str:
    return f"ForeignInput-{job_name}"


def foreign_output_buffer(job_name: str) -> str:
    return f"ForeignOutput-{job_name}"


def push_job_name(input_op_name: str) -> str:
    return f"System-Push-{input_op_name}"


def pull_job_name(return_op_name: str) -> str:
    return f"System-Pull-{return_op_name}"


def make_push_job(input_op: OpConf, desc: BlobDesc) -> Job:
    """ForeignInput -> an output op named exactly like the user job's input op, on its placement (with its SBP,
    which the SBP pass forces): the plan builder's boxing scatters the pushed batch, one slice copy per device."""
    name = push_job_name(input_op.name)
    b = SystemJobBuilder(name, "push")
    attrs = {"shape": desc.shape, "dtype": desc.dtype, "ofblob_buffer_name": foreign_input_buffer(name)}
    if desc.is_dynamic:  # the pushed pieces carry their own shapes (runtime/dynamic.py)
        attrs["is_dynamic"] = True
    lbn = b.add("foreign_input", f"{name}-ForeignInput", attrs=attrs)
    b.add("output", input_op.name, {"in": (lbn,)}, placement=input_op.parallel_conf)  # same placement
    return b.build()


def make_pull_job(return_op: OpConf, desc: BlobDesc, mirrored_parts: int = 0, mirrored_axis: int | None = 0) -> Job:
    """An input op named like the user job's return op (its placement and SBP) -> ForeignOutput on 0:0, which
    receives the whole blob (boxing gathers the devices' pieces); ``mirrored_parts``: a mirrored return, handed
    back as that many blobs (one per device), the whole blob cut on ``mirrored_axis``, or a copy of it for each
    device where that is None (a B blob)."""
    name = pull_job_name(return_op.name)
    b = SystemJobBuilder(name, "pull")
    lbn = b.add("input", return_op.name, attrs={"shape": desc.shape, "dtype": desc.dtype,
                                                **({"is_dynamic": True} if desc.is_dynamic else {})},
                placement=return_op.parallel_conf)
    attrs: dict[str, Any] = {"ofblob_buffer_name": foreign_output_buffer(name)}
    if mirrored_parts:
        attrs["mirrored_parts"] = mirrored_parts
        attrs["mirrored_axis"] = mirrored_axis
    b.add("foreign_output", f"{name}-ForeignOutput", {"in": (lbn,)}, attrs)
    return b.build()


MODEL_IO_JOBS = {"init": "System-ModelInit", "load": "System-ModelLoad", "save": "System-ModelSave"}


def make_model_io_jobs(variables: list[OpConf], descs: dict[str, BlobDesc]) -> list[Job]:
    """One job each to initialize, load and save every variable, in place in the variable's shared memory.

    Init needs nothing from outside; load and save take a path through a ForeignInput. The per-variable ops are
    chained by control edges, as OneFlow chains its model_*_v2 ops with ticks, so they run one at a time.
    They run on the variable's placement, each device's task on its own piece (a split variable's save writes
    its slice into the one ``out`` file; a broadcast one is saved by the first device).
    """
    jobs = []
    for kind, name in MODEL_IO_JOBS.items():
        b = SystemJobBuilder(name, "model_io")
        path_lbn = ""  # set below for load/save, which alone read a path
        if kind != "init":
            attrs = {"shape": (PATH_CAPACITY,), "dtype": "uint8", "ofblob_buffer_name": foreign_input_buffer(name)}
            path_lbn = b.add("foreign_input", f"{name}-ForeignInput", attrs=attrs)
        previous: tuple[str, ...] = ()
        for var in variables:
            ref = b.add("variable", var.name, attrs=dict(var.attrs), placement=var.parallel_conf)
            op_name = f"{name}-{var.name}"
            init = {"initializer": var.attrs["initializer"], "random_seed": var.attrs["random_seed"]}
            # beside the variable (OneFlow's MakeModelIoV2Jobs), so each device's piece is read or written in place
            if kind == "init":
                b.add("model_init", op_name, {"ref": (ref,)}, init, ctrl_in=previous, placement=var.parallel_conf)
            else:  # load initializes a variable missing from the checkpoint exactly as init would
                attrs = {"variable_name": var.name, **(init if kind == "load" else {})}
                b.add(f"model_{kind}", op_name, {"path": (path_lbn,), "ref": (ref,)}, attrs, ctrl_in=previous,
                      placement=var.parallel_conf)
            previous = (op_name,)
        jobs.append(b.build())
    return jobs
