"""The job builder (OneFlow's JobBuildAndInferCtx): adds ops, names them, infers shapes at once."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import OpInferError
from ..ir import BlobDesc, Job, OpConf, ParallelConf
from ..ir.sbp import SbpParallel, SbpSignature, input_bns
from ..ops.registry import REQUIRED, InferCtx, get_op_def
from . import scope
from .blob import LazyBlob
from .location import user_location


class JobBuilder:
    """Collects the ops of one job while its function is traced."""

    def __init__(self, job_name: str, job_conf: dict[str, Any], default_placement: ParallelConf) -> None:
        self.job_name = job_name
        self.job_conf = job_conf
        self.default_placement = default_placement
        self.ops: list[OpConf] = []
        self.blob_descs: dict[str, BlobDesc] = {}
        self.input_op_names: list[str] = []
        self.return_op_names: list[str] = []
        self.creator = "user"
        self.record_loc = True  # system jobs have no user line
        self.variables: dict[str, LazyBlob] = {}  # scoped variable name -> its blob (get_variable reuse)
        self.train_conf: dict[str, Any] | None = None  # set by optimizer.minimize (training issue)
        self.added_loss_lbns: list[str] = []  # flow.losses.add_loss: more losses, before or after minimize()
        self.watches: list[tuple[str, str, Any]] = []  # (kind, lbn, handler), for flow.watch
        # OneFlow's job_parallel_view_conf while building: op name -> bn_in_op -> the SBP a hint asks for;
        # inference (compiler/sbp_infer.py) completes these into every op's signature
        self.sbp_hints: dict[str, dict[str, SbpParallel]] = {}
        self.mirrored_op_names: list[str] = []  # ops added under the mirrored view
        self.default_view = "consistent"  # FunctionConfig.default_logical_view
        self.function_desc: Any = None  # the FunctionDesc being traced (flow.current_global_function_desc)
        self.mirrored_pieces: dict[str, str] = {}  # consistent lbn -> its DistributeSplit's output (_mirrored_piece)
        self._name_counts: dict[str, int] = {}
        self._names: set[str] = set()
        # Interface names generated so far in the session (name -> job); shared by the session's InterfaceCounter.
        self.generated_names: Mapping[str, str] = {}

    @classmethod
    def reopen(cls, job: Job, creator: str) -> JobBuilder:
        """A builder over an existing job, so a pass adds ops with the same inference and naming as tracing."""
        builder = cls(job.name, dict(job.job_conf), ParallelConf())
        builder.ops = list(job.ops)
        builder._names = {op.name for op in job.ops}
        builder.blob_descs = dict(job.blob_descs)
        builder.input_op_names = list(job.input_op_names)
        builder.return_op_names = list(job.return_op_names)
        builder.sbp_hints = {name: dict(sig.bn_in_op2sbp_parallel) for name, sig in job.sbp_hints.items()}
        builder.mirrored_op_names = list(job.mirrored_op_names)
        builder.creator = creator
        builder.record_loc = False
        return builder

    def blob(self, lbn: str) -> LazyBlob:
        return LazyBlob(lbn, self.blob_descs[lbn], self)

    # -- names -------------------------------------------------------------------------------------
    def has_op(self, name: str) -> bool:
        return name in self._names

    def unique_name(self, op_type: str) -> str:
        while True:
            n = self._name_counts.get(op_type, 0)
            self._name_counts[op_type] = n + 1
            name = scope.scoped_name(f"{op_type}_{n}")
            if not self.has_op(name):
                return name

    # -- adding ops --------------------------------------------------------------------------------
    def add_op(
        self,
        op_type: str,
        inputs: Mapping[str, Sequence[LazyBlob]] | None = None,
        attrs: Mapping[str, Any] | None = None,
        name: str | None = None,
        ctrl_in_op_names: Sequence[str] = (),
        placement: ParallelConf | None = None,
        scoped: bool = True,
        loc: str | None = None,
    ) -> list[LazyBlob]:
        """Add one op, infer its outputs, and return them as lazy blobs (flat, in output-arg order)."""
        op_def = get_op_def(op_type)
        loc = loc or (user_location() if self.record_loc else None)
        inputs = dict(inputs or {})
        for arg in inputs:
            if arg not in op_def.inputs:
                raise TypeError(f"op type {op_type!r} has no input {arg!r}; its inputs are {op_def.inputs}")
        # kernels take their inputs by position in the op's declared order, not the caller's dict order (an
        # optional input given early would shift every index after it)
        inputs = {arg: inputs[arg] for arg in op_def.inputs if arg in inputs}
        for arg, blobs in inputs.items():
            for blob in blobs:
                if not isinstance(blob, LazyBlob):
                    raise OpInferError(
                        f"{_where(loc)}{op_type}: input {arg!r} must be a blob made inside this job function; "
                        f"got {type(blob).__name__}"
                    )
        full_attrs = _fill_attrs(op_type, op_def.attrs, dict(attrs or {}))
        if name is None:
            op_name = self.unique_name(op_type)
        else:
            if not name:
                raise OpInferError(f"{_where(loc)}{op_type}: op name is empty; give a non-empty name or name=None "
                                   f"for a generated one")
            op_name = scope.scoped_name(name) if scoped else name
            if op_name in self.generated_names:
                raise OpInferError(
                    f"{_where(loc)}{op_type} op name {op_name!r} in job {self.job_name!r} is the generated name of "
                    f"an interface op of job {self.generated_names[op_name]!r}; interface ops with the same name "
                    "share memory across jobs, so flowlab reserves Input_<n>/Return_<n> names it has generated. "
                    "Give the op another name."
                )
            if self.has_op(op_name):
                raise OpInferError(f"{_where(loc)}op name {op_name!r} is already used in job {self.job_name!r}")
        placement = placement or scope.current_placement(self.default_placement)
        mirrored = (self.creator == "user" and op_type not in _ALWAYS_CONSISTENT
                    and scope.current_view(self.default_view) == "mirrored")
        if mirrored and placement.parallel_num > 1:  # OneFlow's sub-ops infer on each device's piece
            inputs = {arg: [self._mirrored_piece(b, placement.parallel_num, loc) for b in blobs]
                      for arg, blobs in inputs.items()}
        in_descs = {arg: tuple(b.blob_desc for b in blobs) for arg, blobs in inputs.items()}
        ctx = InferCtx(op_name, op_type, in_descs, full_attrs)
        try:
            out_descs = op_def.infer(ctx)
        except OpInferError as err:
            shapes = ", ".join(f"{a}={'/'.join(map(str, d))}" for a, d in in_descs.items())
            piece = (" is inferred on one device's piece, since a mirrored op reads each device's piece of a "
                     "consistent S(0) blob (OneFlow's DistributeSplit); " if mirrored and self.mirrored_pieces else "")
            raise OpInferError(f"{_where(loc)}op {op_name!r} ({op_type}){piece} with inputs ({shapes}): {err}"
                               ) from None
        outputs: dict[str, tuple[str, ...]] = {}
        for arg in op_def.outputs:
            descs = out_descs.get(arg, [])
            if op_def.system and len(descs) == 1:
                outputs[arg] = (f"{op_name}/{arg}",)
            else:
                outputs[arg] = tuple(f"{op_name}/{arg}_{i}" for i in range(len(descs)))
            for lbn, desc in zip(outputs[arg], descs):
                self.blob_descs[lbn] = desc
        op = OpConf(
            name=op_name,
            op_type=op_type,
            inputs={arg: tuple(b.lbn for b in blobs) for arg, blobs in inputs.items()},
            outputs=outputs,
            attrs=full_attrs,
            parallel_conf=placement,
            ctrl_in_op_names=tuple(ctrl_in_op_names),
            loc=loc,
            created_by=self.creator,
        )
        hints = {bn: blob.distribute for (bn, _lbn), blob in zip(input_bns(op.inputs, op_def.system),
                                                                  [b for bs in inputs.values() for b in bs])
                 if blob.distribute is not None}
        if hints:
            self.sbp_hints[op_name] = hints
        if mirrored:
            self.mirrored_op_names.append(op_name)
        self.ops.append(op)
        self._names.add(op_name)
        return [LazyBlob(lbn, self.blob_descs[lbn], self) for lbns in outputs.values() for lbn in lbns]

    def _mirrored_piece(self, blob: LazyBlob, n: int, loc: str | None) -> LazyBlob:
        """What a mirrored op on ``n`` devices reads of ``blob``: a consistent blob lying S(0) whose rows divide
        evenly, on as many devices, is read through OneFlow's DistributeSplit
        (``FindOrCreateMirroredLbiFromCompatibleConsistentBlob``, once per blob), so the op is inferred on one
        device's piece now, as OneFlow's sub-ops are, and ``blob.shape`` says the piece. Anything else is left to
        the AutoDistributeSplit pass (compiler/mirrored_split.py), which also clones B blobs."""
        if blob.lbn in self.mirrored_pieces:
            out = self.mirrored_pieces[blob.lbn]
            return LazyBlob(out, self.blob_descs[out], self, blob.distribute)
        producer = next((op for op in reversed(self.ops) if blob.lbn in op.output_lbns), None)
        shape = blob.blob_desc.shape
        if (producer is None or producer.name in self.mirrored_op_names or producer.parallel_conf.parallel_num != n
                or not shape or shape[0] % n or self.added_loss_lbns):
            return blob
        from ..compiler.blob_view import producer_view  # the SBP rules sit above the front end
        from ..compiler.mirrored_split import SPLIT_PREFIX

        if producer_view(self.build(), blob.lbn)[1] != 0:
            return blob
        i = 0
        while self.has_op(f"{SPLIT_PREFIX}{i}"):
            i += 1
        name = f"{SPLIT_PREFIX}{i}"
        attrs = {"axis": 0, "parallel_num": n, "mirrored": True, "is_variable_ref": producer.op_type == "variable"}
        out = f"{name}/out"
        self.ops.append(OpConf(name, "distribute_split", {"in": (blob.lbn,)}, {"out": (out,)}, attrs,
                               producer.parallel_conf, loc=loc, created_by="AutoDistributeSplit"))
        self._names.add(name)
        self.mirrored_op_names.append(name)
        self.blob_descs[out] = BlobDesc((shape[0] // n, *shape[1:]), blob.blob_desc.dtype, blob.blob_desc.is_dynamic)
        self.mirrored_pieces[blob.lbn] = out
        return LazyBlob(out, self.blob_descs[out], self, blob.distribute)

    def del_ops(self, names: set[str]) -> None:
        """Remove ops a pass replaces (OneFlow's JobBuilder::DelOps); their names become free again."""
        self.ops = [op for op in self.ops if op.name not in names]
        self._names -= names
        for name in names:
            self.sbp_hints.pop(name, None)

    def set_sbp_hint(self, op_name: str, bn: str, sbp: SbpParallel) -> None:
        self.sbp_hints.setdefault(op_name, {})[bn] = sbp

    def copy_sbp_hint(self, from_op: str, to_op: str) -> None:
        """``to_op`` (a variable) lies as ``from_op`` does: an optimizer state beside its model."""
        if "out" in self.sbp_hints.get(from_op, {}):
            self.set_sbp_hint(to_op, "out", self.sbp_hints[from_op]["out"])

    def build(self, kind: str = "user") -> Job:
        job_conf = dict(self.job_conf)
        if self.added_loss_lbns and self.train_conf is None:
            raise OpInferError(f"job {self.job_name!r} marked losses with flow.losses.add_loss but has no optimizer: "
                               "call flow.optimizer.<Optimizer>(...).minimize(loss) in the job as well")
        if self.train_conf is not None:
            added = [lbn for lbn in self.added_loss_lbns if lbn not in self.train_conf["loss_lbns"]]
            job_conf["train_conf"] = {**self.train_conf, "loss_lbns": [*self.train_conf["loss_lbns"], *added]}
        return Job(
            name=self.job_name,
            kind=kind,
            ops=tuple(self.ops),
            blob_descs=dict(self.blob_descs),
            job_conf=job_conf,
            input_op_names=tuple(self.input_op_names),
            return_op_names=tuple(self.return_op_names),
            sbp_hints={name: SbpSignature(hints) for name, hints in self.sbp_hints.items() if hints},
            mirrored_op_names=tuple(self.mirrored_op_names),
        )


# Variables are consistent in every view (OneFlow's get_variable); the trace decides for inputs and returns. A
# watch is the runtime's copy out, not a per-device op: its handler sees the blob consistently (OneFlow's
# LocalMirroredTensor.numpy(), the pieces joined), so it reads a mirrored blob as a consistent op.
# OneFlow's distribute ops are consistent ops (ConsistentForward) in either view.
_ALWAYS_CONSISTENT = frozenset({"variable", "input", "return", "foreign_watch", "distribute_split", "distribute_clone",
                                "distribute_concat", "distribute_add"})


def _where(loc: str | None) -> str:
    return f"{loc}: " if loc else ""


def _fill_attrs(op_type: str, defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    unknown = set(given) - set(defaults)
    if unknown:
        raise TypeError(f"op type {op_type!r} has no attr(s) {sorted(unknown)}; its attrs are {sorted(defaults)}")
    out = {}
    for key, default in defaults.items():
        if key in given:
            out[key] = given[key]
        elif default is REQUIRED:
            raise TypeError(f"op type {op_type!r} needs attr {key!r}")
        else:
            out[key] = default
    return out


builder_stack: list[JobBuilder] = []


def current_builder() -> JobBuilder:
    if not builder_stack:
        raise RuntimeError(
            "flowlab ops build a job and can only be called inside a @flow.global_function while it is traced"
        )
    return builder_stack[-1]


@contextmanager
def building(builder: JobBuilder) -> Iterator[JobBuilder]:
    builder_stack.append(builder)
    try:
        yield builder
    finally:
        builder_stack.pop()


@contextmanager
def created_by(creator: str) -> Iterator[None]:
    """Mark ops added in the block as made by a pass (autograd, optimizer, ...) rather than the user."""
    builder = current_builder()
    old, builder.creator = builder.creator, creator
    try:
        yield
    finally:
        builder.creator = old


def add_op(op_type: str, inputs: Mapping[str, Sequence[LazyBlob]] | None = None,
           attrs: Mapping[str, Any] | None = None, name: str | None = None, **kw: Any) -> list[LazyBlob]:
    """Add an op to the job being traced; the user-facing op functions call this."""
    return current_builder().add_op(op_type, inputs, attrs, name, **kw)
