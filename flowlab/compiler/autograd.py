"""GenerateBackwardAndOptimizerOpConfs: the backward pass, then one update op per variable.

As in OneFlow (autograd.cpp): each loss is seeded with ones, the registered gradient rule of each op is called in
reverse topological order, and a variable's gradient is divided by the loss element count (so a per-example
loss trains like its mean), then regularized, clipped, and handed to ``<var>_optimizer``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import CompileError
from ..frontend.blob import LazyBlob
from ..frontend.builder import JobBuilder, building, created_by
from ..frontend.scope import placed_on
from ..ir import Job, OpConf
from ..ops.registry import get_op_def


class GradCtx:
    """What a gradient rule sees: the forward op, its inputs/outputs as blobs, and the output gradients."""

    def __init__(self, builder: JobBuilder, op: OpConf, grads: dict[str, LazyBlob], needs: set[str]) -> None:
        self.builder, self.op = builder, op
        self._grads, self._needs = grads, needs
        self.dx: dict[str, LazyBlob] = {}

    @property
    def attrs(self) -> Mapping[str, Any]:
        return self.op.attrs

    def x(self, arg: str, index: int = 0) -> LazyBlob:
        return self.builder.blob(self.op.inputs[arg][index])

    def y(self, arg: str, index: int = 0) -> LazyBlob:
        return self.builder.blob(self.op.outputs[arg][index])

    def dy(self, arg: str, index: int = 0) -> LazyBlob | None:
        """The gradient of an output, or None if nothing downstream needs it."""
        return self._grads.get(self.op.outputs[arg][index])

    def needs_dx(self, arg: str, index: int = 0) -> bool:
        return self.op.inputs[arg][index] in self._needs

    def set_dx(self, arg: str, blob: LazyBlob, index: int = 0) -> None:
        lbn = self.op.inputs[arg][index]
        if lbn in self._needs:
            self.dx[lbn] = _accumulate(self.dx.get(lbn), blob)


GradRule = Callable[[GradCtx], None]


def _accumulate(old: LazyBlob | None, new: LazyBlob) -> LazyBlob:
    if old is None:
        return new
    from ..ops.math_ops import add

    return add(old, new)


def lbns_needing_grad(job: Job, variables: list[OpConf], loss_lbns: list[str]) -> set[str]:
    """Blobs that depend on a trainable variable and that the loss depends on."""
    from_vars = {op.output_lbns[0] for op in variables}
    for op in job.ops:
        if any(lbn in from_vars for lbn in op.input_lbns):
            from_vars.update(op.output_lbns)
    to_loss = set(loss_lbns)
    for op in reversed(job.ops):
        if any(lbn in to_loss for lbn in op.output_lbns):
            to_loss.update(op.input_lbns)
    return from_vars & to_loss


def backward(builder: JobBuilder, job: Job, loss_lbns: list[str], variables: list[OpConf],
             watched: tuple[str, ...] = ()) -> tuple[dict[str, LazyBlob], dict[str, LazyBlob]]:
    """Add the backward ops; return the gradients of the trainable variables reached (by variable name) and of
    the ``watched`` blobs (by lbn)."""
    from ..ops.array_ops import ones_like

    needs = lbns_needing_grad(job, variables, loss_lbns) | set(watched)
    grads: dict[str, LazyBlob] = {}
    for lbn in loss_lbns:
        with placed_on(job.producer_of(lbn).parallel_conf):
            grads[lbn] = ones_like(builder.blob(lbn))
        if job.producer_of(lbn).name in job.mirrored_op_names:
            builder.mirrored_op_names.append(grads[lbn].op_name)
    for op in reversed(job.ops):
        if op.op_type == "variable" or not any(lbn in grads for lbn in op.output_lbns):
            continue
        if not any(lbn in needs for lbn in op.input_lbns):
            continue
        rule = get_op_def(op.op_type).grad
        if rule is None:
            where = f" (created at {op.loc})" if op.loc else ""
            raise CompileError(
                f"op {op.name!r} ({op.op_type}){where} lies between a trainable variable and the loss, but op type "
                f"{op.op_type!r} has no gradient rule"
            )
        ctx = GradCtx(builder, op, grads, needs)
        first_new = len(builder.ops)
        with placed_on(op.parallel_conf):  # a gradient runs where its forward op runs
            rule(ctx)
            for lbn, blob in ctx.dx.items():
                grads[lbn] = _accumulate(grads.get(lbn), blob)
        if op.name in job.mirrored_op_names:  # a mirrored op's gradient runs per device too, except where a
            # DistributeConcat joins the pieces into the gradient of a consistent blob (a DistributeSplit's)
            builder.mirrored_op_names.extend(o.name for o in builder.ops[first_new:]
                                             if o.op_type != "distribute_concat")
    var_grads = {op.name: grads[op.output_lbns[0]] for op in variables if op.output_lbns[0] in grads}
    return var_grads, {lbn: grads[lbn] for lbn in watched if lbn in grads}


def loss_element_count(job: Job, loss_lbns: list[str]) -> int:
    """The element count the gradients are divided by; a mirrored loss made from per-device data has one piece
    per device, each of its blob desc's shape, so its count is summed over the devices (OneFlow's
    DynamicLossInstanceNum); one inferred from consistent blobs has the logical desc already. With several losses
    (a list to minimize(), flow.losses.add_loss) OneFlow's ScaleModelDiffByLossInstanceNum CHECKs that they have
    one blob desc and divides by one loss's count, not by their sum."""
    counts = []
    for lbn in loss_lbns:
        producer = job.producer_of(lbn)
        mirrored = producer.name in job.mirrored_op_names and job.holds_pieces(producer.name)
        pieces = producer.parallel_conf.parallel_num if mirrored else 1
        counts.append(math.prod(job.blob_descs[lbn].shape) * pieces)
    if len(set(counts)) > 1:
        shapes = ", ".join(f"{lbn} {job.blob_descs[lbn]}" for lbn in loss_lbns)
        raise CompileError(f"the losses of train job {job.name!r} must have one shape (OneFlow scales the "
                           f"gradients by one loss's element count); got {shapes}")
    return counts[0] if counts else 1


def generate_backward_and_optimizer(job: Job) -> Job:
    """The pass: a no-op for predict jobs; for train jobs, backward then optimizer ops."""
    if job.job_conf.get("job_type") != "train":
        return job
    train_conf = job.job_conf.get("train_conf")
    if train_conf is None:
        raise CompileError(
            f"train job {job.name!r} has no optimizer: call e.g. "
            "flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss) inside it"
        )
    from .optimizer_ops import add_optimizer_ops

    variables = [op for op in job.ops if op.op_type == "variable" and op.attrs["trainable"]]
    loss_lbns = list(train_conf["loss_lbns"])
    watched = tuple(lbn for lbn, *_ in job.job_conf.get("diff_watches", ()))
    builder = JobBuilder.reopen(job, "autograd")
    with building(builder):
        var_grads, watched_grads = backward(builder, job, loss_lbns, variables, watched)
        with created_by("optimizer"):
            add_optimizer_ops(builder, job, train_conf, variables, var_grads, loss_element_count(job, loss_lbns))
    for lbn in watched:
        if lbn not in watched_grads:
            raise CompileError(f"flow.watch_diff on {lbn!r} in job {job.name!r}: the loss does not depend on it, so "
                               "it has no gradient")
    builder.job_conf["diff_lbns"] = {lbn: blob.lbn for lbn, blob in watched_grads.items()}
    return builder.build()


def add_lbi_diff_watcher_op_confs(job: Job) -> Job:
    """AddLbiDiffWatcherOpConfs: a ForeignWatch op on the gradient of every blob given to flow.watch_diff."""
    watches = job.job_conf.get("diff_watches")
    if not watches:
        return job
    if job.job_conf.get("job_type") != "train":
        raise CompileError(f"flow.watch_diff is for train jobs; {job.name!r} is a {job.job_conf.get('job_type')} job")
    diff_lbns = job.job_conf["diff_lbns"]
    builder = JobBuilder.reopen(job, "AddLbiDiffWatcherOpConfs")
    with building(builder):
        for k, (lbn, uuid, as_list) in enumerate(watches):
            name = f"System-DiffWatch-{lbn.replace('/', '-')}"
            name += f"-{k}" if builder.has_op(name) else ""  # the same blob's gradient watched again
            builder.add_op("foreign_watch", {"in": [builder.blob(diff_lbns[lbn])]},
                           {"handler_uuid": uuid, "as_list": as_list}, name=name, scoped=False)
    return builder.build()
