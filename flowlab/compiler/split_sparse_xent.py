"""SplitSparseSoftmaxCrossEntropyOpPass (OneFlow's core/job_rewriter/split_sparse_softmax_cross_entropy_op_pass.cpp).

Runs after autograd, on every user job. Each ``sparse_softmax_cross_entropy_ms`` op (logits split on the class
axis, ops/model_parallel.py) becomes, on the op's placement:

    <op>-split_softmax_reduce_max_device_stage   each device's row maxima            in, out S(last) (pinned)
    <op>-split_softmax_reduce_max_global_stage   the maximum of those               in, out B (pinned)
    <op>-split_softmax_sub_max, -split_softmax_exp, -split_softmax_reduce_sum (P), -split_softmax_div (softmax)
    <op> (sparse_cross_entropy_ms)               each device's term of its classes  out P

The signatures of the two stages are pinned by hints as OneFlow pins them in job_parallel_view_conf; the others
are inferred, so SBP inference asks for the boxing OneFlow's does: the device maxima S(last) -> B (gathered),
the sum of exps P -> B (added), the loss P to whatever reads it. The gradient op made by autograd reads the
forward op's ``prob``; it now reads the division's output instead (UpdateProbConsumerOpConf).
"""

from __future__ import annotations

from ..frontend.builder import JobBuilder
from ..ir import BROADCAST, Job, OpConf, split
from .sbp_infer import SbpInferError

MS_OP = "sparse_softmax_cross_entropy_ms"
PASS_NAME = "SplitSparseSoftmaxCrossEntropyOpPass"


def split_sparse_softmax_cross_entropy(job: Job) -> Job:
    targets = [op for op in job.ops if op.op_type == MS_OP]
    if not targets:
        return job
    builder = JobBuilder.reopen(job, PASS_NAME)
    inserted: dict[str, list[OpConf]] = {}
    prob_to_softmax: dict[str, str] = {}
    for op in targets:
        first = len(builder.ops)
        softmax = _decompose(builder, op)
        inserted[op.name] = builder.ops[first:]
        prob_to_softmax[op.outputs["prob"][0]] = softmax
        if op.name in job.mirrored_op_names:  # a mirrored loss: its parts run per device too
            builder.mirrored_op_names.extend(o.name for o in inserted[op.name])
    ops: list[OpConf] = []
    for op in job.ops:
        if op.name in inserted:
            ops.extend(inserted[op.name])
            ops.append(_cross_entropy_ms(op, prob_to_softmax[op.outputs["prob"][0]]))
            continue
        if any(lbn in prob_to_softmax for lbn in op.input_lbns):
            inputs = {arg: tuple(prob_to_softmax.get(lbn, lbn) for lbn in lbns) for arg, lbns in op.inputs.items()}
            op = op.replace(inputs=inputs)
        ops.append(op)
    descs = {lbn: d for lbn, d in builder.blob_descs.items() if lbn not in prob_to_softmax}
    built = builder.build()
    return built.replace(ops=tuple(ops), blob_descs=descs)


def _decompose(builder: JobBuilder, op: OpConf) -> str:
    """Add the softmax's ops for ``op`` (at the end of ``builder``); -> the softmax's lbn."""
    logits = builder.blob(op.inputs["prediction"][0])
    axis = len(logits.shape) - 1
    n = op.parallel_conf.parallel_num
    if logits.shape[axis] < n:  # said before the device stage's own check, in the words of SBP inference
        where = f"{op.loc}: " if op.loc else ""
        raise SbpInferError(
            f"{where}op {op.name!r} ({op.op_type}) on {op.parallel_conf}: blob 'prediction_0' of shape "
            f"{tuple(logits.shape)} cannot be split on axis {axis} over {n} devices (it has {logits.shape[axis]} "
            "classes there; each device needs at least one)")

    def add(suffix: str, op_type: str, inputs: dict, attrs: dict | None = None) -> list:
        return builder.add_op(op_type, inputs, attrs, name=f"{op.name}-split_softmax_{suffix}", scoped=False,
                              placement=op.parallel_conf, loc=op.loc)

    device_max, _mask, count = add("reduce_max_device_stage", "reduce_max_device_stage", {"in": [logits]},
                                   {"axis": (axis,), "device_num": n})
    builder.set_sbp_hint(device_max.op_name, "in_0", split(axis))
    builder.set_sbp_hint(device_max.op_name, "out_0", split(axis))
    global_max, _ = add("reduce_max_global_stage", "reduce_max_global_stage",
                        {"in": [device_max], "device_count": [count]}, {"axis": (axis,), "keepdims": True})
    builder.set_sbp_hint(global_max.op_name, "in_0", BROADCAST)
    builder.set_sbp_hint(global_max.op_name, "out_0", BROADCAST)
    (shifted,) = add("sub_max", "broadcast_sub", {"x": [logits], "y": [global_max]})
    (exps,) = add("exp", "exp", {"x": [shifted]})
    (total,) = add("reduce_sum", "reduce_sum", {"input_tensor": [exps]}, {"axis": (axis,), "keepdims": True})
    (softmax,) = add("div", "broadcast_div", {"x": [exps], "y": [total]})
    return softmax.lbn


def _cross_entropy_ms(op: OpConf, softmax: str) -> OpConf:
    """``op`` itself, now ``sparse_cross_entropy_ms`` of the softmax (same name and ``out``, so its readers and
    hints stay; ``prob`` is gone)."""
    return op.replace(op_type="sparse_cross_entropy_ms",
                      inputs={"prediction": (softmax,), "label": op.inputs["label"]},
                      outputs={"out": op.outputs["out"]})
